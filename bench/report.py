"""What `make bench` prints and writes to bench/results.md: the table of every
server and request, memory, and the targets, each beside its figure, the
baseline's and PASS/MISS.

Issue 26's target: over HTTP, refapi as shipped serves the GET and the POST at
>= 0.95x the bare app on stock gunicorn, in one run of at least five rounds; the
ratio with every app on refapi's worker class is reported beside it. Issue 4's
(the deep page, the payment, memory) follow.
"""

from __future__ import annotations

import statistics
from types import SimpleNamespace

NAMES = SimpleNamespace(
    CEILING="ceiling (constant WSGI)",
    BASELINE="baseline (bare WSGI + SQLite)",
    REFAPI="refapi as shipped",
    FALCON="Falcon, the same work",
    FLASK="Flask",
    BASELINE_SAME="baseline on refapi's worker",
    FALCON_SAME="Falcon on refapi's worker",
    BASELINE_PG="baseline (bare WSGI + PostgreSQL)",
    REFAPI_PG="refapi as shipped, PostgreSQL",
    BASELINE_PG_SAME="baseline, PostgreSQL, on refapi's worker",
    SCRYPT="refapi, admin's password hashed with scrypt",
    REFAPI_GRANIAN="refapi on Granian",
    BASELINE_GRANIAN="baseline on Granian",
    FALCON_GRANIAN="Falcon, the same work, on Granian",
)
# Issue 37: refapi on Granian over the bare app on stock gunicorn, and over Falcon
# doing the same work on Granian.
GRANIAN_TARGET, GRANIAN_FALCON_TARGET = 2.5, 0.95
N = NAMES
TARGET = 0.95  # issue 26: refapi as shipped over the bare app on stock gunicorn
MIN_ROUNDS = 5  # issue 26: a verdict needs at least this many rounds
ISSUE_26 = ("GET /v1/todos/1", "POST /v1/articles")


def ratios(results, server: str, base: str, load: str) -> list[float]:
    """Per round, the server's req/s over the base's in the same round."""
    ours, theirs = results[(server, load)], results[(base, load)]
    return [a["rps"] / b["rps"] for a, b in zip(ours, theirs, strict=True)]


def spread(values: list[float]) -> str:
    """The median, and the lowest and the highest value in brackets."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def rps(results, server: str, load: str) -> float:
    return statistics.median(s["rps"] for s in results[(server, load)])


def verdict(met: bool) -> str:
    return "PASS" if met else "MISS"


def text(header, servers, results, rss, steady, login, rounds: int) -> str:
    lines = [
        *header,
        "",
        "| server | request | req/s | ratio (spread) | to | p50 ms | p99 ms |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    loads = dict.fromkeys(load for _, load in results)
    for load in loads:
        for server in servers:
            samples = results.get((server.name, load))
            if not samples:
                continue
            lines.append(
                f"| {server.name} | {load} | {rps(results, server.name, load):,.0f} "
                f"| {spread(ratios(results, server.name, server.baseline, load))} "
                f"| {server.baseline} "
                f"| {statistics.median(s['p50'] for s in samples):.2f} "
                f"| {statistics.median(s['p99'] for s in samples):.2f} |"
            )
    lines += [
        "",
        "Memory per worker (the largest of the server's workers): resident after the",
        "rounds (steady, warmed up) and its peak (VmHWM) since the worker started.",
        "",
        "| server | steady RSS (MiB) | ratio | peak RSS (MiB) | ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    for server in servers:
        name, base = server.name, server.baseline
        lines.append(
            f"| {name} | {steady[name] / 1024:.1f} | {steady[name] / steady[base]:.2f} "
            f"| {rss[name] / 1024:.1f} | {rss[name] / rss[base]:.2f} |"
        )
    lines += [
        "",
        f"A login with the default hash, scrypt (a server apart, {N.SCRYPT!r}): a",
        f"worker at {login['steady']:.1f} MiB resident peaks {login['added']:.1f} MiB"
        f" higher while it hashes, and holds {login['after']:.1f} MiB after.",
        "",
        *issue_26(results, rounds),
        "",
        *issue_4(results, rss, steady),
        "",
        *issue_37(results, rounds),
    ]
    return "\n".join(lines) + "\n"


def issue_26(results, rounds: int) -> list[str]:
    """The target as shipped, then the ratio on one worker class (refapi's)."""
    short = rounds < MIN_ROUNDS
    rows = [
        f"Issue 26: refapi as shipped >= {TARGET}x the bare app on stock gunicorn"
        f" (median of {rounds} rounds, spread in brackets"
        + (f"; fewer than {MIN_ROUNDS} rounds: no verdict)" if short else ")"),
        "",
        "| target | refapi req/s | the bare app's req/s | ratio | Falcon's ratio "
        "| verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    backends = [
        ("SQLite", N.REFAPI, N.BASELINE, N.FALCON),
        ("PostgreSQL", N.REFAPI_PG, N.BASELINE_PG, None),
    ]
    for backend, refapi, base, falcon in backends:
        for load in ISSUE_26:
            if (refapi, load) not in results:
                continue
            ours = ratios(results, refapi, base, load)
            theirs = spread(ratios(results, falcon, base, load)) if falcon else ""
            met = statistics.median(ours) >= TARGET
            ours_rps, base_rps = rps(results, refapi, load), rps(results, base, load)
            rows.append(
                f"| {load}, {backend}: >= {TARGET}x "
                f"| {ours_rps:,.0f} | {base_rps:,.0f} "
                f"| {spread(ours)} | {theirs} "
                f"| {'n/a' if short else verdict(met)} |"
            )
    rows += [
        "",
        "The same worker class for every app, refapi's"
        " (refapi.serving.gunicorn.SyncWorker):",
        "",
        "| request | refapi as shipped / the bare app | Falcon / the bare app |",
        "|---|---:|---:|",
    ]
    same = [
        ("SQLite", N.REFAPI, N.BASELINE_SAME, N.FALCON_SAME),
        ("PostgreSQL", N.REFAPI_PG, N.BASELINE_PG_SAME, None),
    ]
    for backend, refapi, base, falcon in same:
        for load in ISSUE_26:
            if (refapi, load) not in results:
                continue
            theirs = spread(ratios(results, falcon, base, load)) if falcon else ""
            rows.append(
                f"| {load}, {backend} | {spread(ratios(results, refapi, base, load))} "
                f"| {theirs} |"
            )
    return rows


def issue_37(results, rounds: int) -> list[str]:
    """Granian beside gunicorn: refapi on Granian over the bare app on stock
    gunicorn, and over Falcon doing the same work on Granian."""
    if (N.REFAPI_GRANIAN, ISSUE_26[0]) not in results:
        return []
    short = rounds < MIN_ROUNDS
    rows = [
        f"Issue 37: refapi on Granian >= {GRANIAN_TARGET}x the bare app on stock"
        f" gunicorn, and >= {GRANIAN_FALCON_TARGET}x Falcon doing the same work on"
        " Granian (two threads a Granian worker)",
        "",
        "| request | refapi on Granian req/s | / the bare app on gunicorn | verdict "
        "| / Falcon on Granian | verdict | the bare app on Granian / on gunicorn |",
        "|---|---:|---:|---|---:|---|---:|",
    ]
    for load in ISSUE_26:
        if (N.REFAPI_GRANIAN, load) not in results:
            continue
        over_bare = ratios(results, N.REFAPI_GRANIAN, N.BASELINE, load)
        over_falcon = [
            ours["rps"] / theirs["rps"]
            for ours, theirs in zip(
                results[(N.REFAPI_GRANIAN, load)],
                results[(N.FALCON_GRANIAN, load)],
                strict=True,
            )
        ]
        bare = ratios(results, N.BASELINE_GRANIAN, N.BASELINE, load)
        met_bare = statistics.median(over_bare) >= GRANIAN_TARGET
        met_falcon = statistics.median(over_falcon) >= GRANIAN_FALCON_TARGET
        rows.append(
            f"| {load} | {rps(results, N.REFAPI_GRANIAN, load):,.0f} "
            f"| {spread(over_bare)} | {'n/a' if short else verdict(met_bare)} "
            f"| {spread(over_falcon)} | {'n/a' if short else verdict(met_falcon)} "
            f"| {spread(bare)} |"
        )
    return rows


def issue_4(results, rss, steady) -> list[str]:
    """The deep page, the payment and memory (SQLite), refapi's beside the bare
    app's; a target whose requests were not run is left out."""
    refapi, base = N.REFAPI, N.BASELINE
    rows = [
        "| target | refapi | the bare app | verdict |",
        "|---|---:|---:|---|",
    ]

    def cost_ratio(server: str, load: str, reference: str) -> float:
        """Median over rounds of cost(load) / cost(reference), paired per round."""
        ours, ref = results[(server, load)], results[(server, reference)]
        return statistics.median(
            r["rps"] / o["rps"] for o, r in zip(ours, ref, strict=True)
        )

    pairs = [
        ("deep page costs the first page's, within 10%", "GET /v1/items deep cursor",
         "GET /v1/items?limit=20", 1.10),
        ("POST /v1/payments <= 1.5x POST /v1/articles", "POST /v1/payments",
         "POST /v1/articles", 1.5),
    ]  # fmt: skip
    for name, load, reference, most in pairs:
        if (refapi, load) in results and (refapi, reference) in results:
            ours = cost_ratio(refapi, load, reference)
            theirs = cost_ratio(base, load, reference)
            rows.append(f"| {name} | {ours:.2f}x | {theirs:.2f}x "
                        f"| {verdict(ours <= most)} |")  # fmt: skip
    for name, kib in (("steady", steady), ("peak", rss)):
        ratio = kib[refapi] / kib[base]
        rows.append(
            f"| {name} RSS per worker <= 1.5x the bare app's "
            f"| {kib[refapi] / 1024:.1f} MiB ({ratio:.2f}x) "
            f"| {kib[base] / 1024:.1f} MiB | {verdict(ratio <= 1.5)} |"
        )
    return rows
