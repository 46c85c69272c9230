// The README's round trip through refapi, in TypeScript, with types generated from
// the service's own OpenAPI document (docs/client.md, "TypeScript"): register, log
// in, an article's life with its ETags, a page of items and the next, a payment sent
// twice with one Idempotency-Key, a logout. Each step checks the answer and prints a
// line; the first surprise throws, and node exits 1. The server's URL is REFAPI_URL.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const baseUrl = process.env["REFAPI_URL"] ?? "http://127.0.0.1:8000";
// JSON answers only: the document also offers the vendor type, XML and CSV.
const api = createClient<paths, "application/json">({ baseUrl });

type Article = paths["/v1/articles/{id}"];
type Items = paths["/v1/items"];
type Payments = paths["/v1/payments"];

// The headers the document declares on an operation's answer with this status;
// openapi-typescript adds `[name: string]: unknown` for any other, left out here,
// so reading a header the document does not declare does not compile.
type Declared<Op, Status extends number> = Op extends {
  responses: { [S in Status]: { headers: infer H } };
}
  ? keyof { [K in keyof H as string extends K ? never : K]: H[K] } & string
  : never;

function header<Op, Status extends number>(
  response: Response,
  name: Declared<Op, Status>,
): string {
  const value = response.headers.get(name);
  assert.ok(value !== null, `${response.url} answered without ${name}`);
  return value;
}

// Register and log in: a user of its own, so that the round trip can run again.
const email = `ts-${randomUUID()}@example.com`;
const password = "correct-horse-battery-9";
const user = await api.POST("/api/users", { body: { email, password } });
assert.equal(user.response.status, 201);
assert.ok(user.data);
const login = await api.POST("/api/login", { body: { email, password } });
assert.equal(login.response.status, 200);
assert.ok(login.data);
const token = login.data.token;
const me = createClient<paths, "application/json">({
  baseUrl,
  headers: { Authorization: `Bearer ${token}` },
});
console.log(`registered and logged in as user ${user.data.id}`);

// An article: created, found by its tag, read again only if it changed.
const tag = randomUUID();
const created = await me.POST("/v1/articles", {
  body: { title: "Hello", tags: [tag] },
});
assert.equal(created.response.status, 201);
assert.ok(created.data);
const id = created.data.id;
assert.equal(created.response.headers.get("Location"), `/v1/articles/${id}`);
assert.deepEqual(created.data.author, { type: "user", id: user.data.id });
const tagged = await api.GET("/v1/articles", { params: { query: { tag } } });
assert.deepEqual(tagged.data?.data.map((article) => article.id), [id]);
const read = await api.GET("/v1/articles/{id}", { params: { path: { id } } });
const etag = header<Article["get"], 200>(read.response, "ETag");
const cached = await api.GET("/v1/articles/{id}", {
  params: { path: { id }, header: { "If-None-Match": etag } },
});
assert.equal(cached.response.status, 304);
console.log(`created article ${id}, ETag ${etag}; 304 with If-None-Match`);

// A change based on a stale copy is refused, with the current tag in the error;
// a change based on the current one is made, and answers with its new tag.
const stale = await me.PATCH("/v1/articles/{id}", {
  params: { path: { id }, header: { "If-Match": '"stale"' } },
  body: { title: "Changed" },
});
assert.equal(stale.response.status, 412);
assert.equal(stale.error?.code, "PRECONDITION_FAILED");
assert.equal(stale.error.details.etag, etag);
const patched = await me.PATCH("/v1/articles/{id}", {
  params: { path: { id }, header: { "If-Match": etag } },
  body: { title: "Changed", tags: null },
});
assert.equal(patched.response.status, 200);
assert.equal(patched.data?.title, "Changed");
assert.deepEqual(patched.data.tags, []);
const changed = header<Article["patch"], 200>(patched.response, "ETag");
assert.notEqual(changed, etag);
console.log(`patched article ${id}: 412 on a stale If-Match, new ETag ${changed}`);

// Deleted with the tag the PATCH answered (the old one is 412), then gone.
const late = await me.DELETE("/v1/articles/{id}", {
  params: { path: { id }, header: { "If-Match": etag } },
});
assert.equal(late.response.status, 412);
const deleted = await me.DELETE("/v1/articles/{id}", {
  params: { path: { id }, header: { "If-Match": changed } },
});
assert.equal(deleted.response.status, 204);
const gone = await api.GET("/v1/articles/{id}", { params: { path: { id } } });
assert.equal(gone.response.status, 404);
assert.equal(gone.error?.code, "NOT_FOUND");
console.log(`deleted article ${id} with the new ETag; now 404`);

// A page of items, and the next one from its cursor.
const first = await api.GET("/v1/items", { params: { query: { limit: 2 } } });
assert.ok(first.data?.nextCursor);
const cursor = first.data.nextCursor;
assert.equal(header<Items["get"], 200>(first.response, "X-Next-Cursor"), cursor);
const next = await api.GET("/v1/items", {
  params: { query: { limit: 2, cursor } },
});
const ids = [...first.data.data, ...(next.data?.data ?? [])].map((i) => i.id);
assert.deepEqual(ids, [1, 2, 3, 4]);
console.log(`paged items ${ids.join(", ")} with the cursor of the first page`);

// A payment sent twice with one Idempotency-Key is made once: the second answer
// is the first one again, marked Idempotent-Replayed.
const key = `order-${randomUUID()}`;
const pay = () =>
  me.POST("/v1/payments", {
    params: { header: { "Idempotency-Key": key } },
    body: { amount: 10.5, currency: "EUR" },
  });
const paid = await pay();
const replayed = await pay();
assert.equal(paid.response.status, 201);
assert.equal(replayed.response.status, 201);
assert.ok(paid.data && replayed.data);
assert.equal(replayed.data.id, paid.data.id);
assert.equal(paid.response.headers.get("Idempotent-Replayed"), null);
const replay = header<Payments["post"], 201>(replayed.response, "Idempotent-Replayed");
assert.equal(replay, "true");
console.log(`paid ${paid.data.id} once; the second answer replayed it`);

// The logout ends the token: the next request with it is refused.
const logout = await me.POST("/api/logout");
assert.equal(logout.response.status, 204);
const after = await me.GET("/v1/todos/{id}", { params: { path: { id: 1 } } });
assert.equal(after.response.status, 401);
assert.equal(after.error?.code, "UNAUTHENTICATED");
console.log("logged out; the token is refused");
