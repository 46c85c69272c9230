// Starts Swagger UI on the document the page names in data-openapi-url: the page
// writes that URL with the mount point, so this file is the same under any mount.
// It is a file of its own, not an inline script, so the page's
// Content-Security-Policy can refuse every inline script.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    domNode: root,
    deepLinking: true,
    // The default validator badge asks a public service about the document:
    // nothing on this page goes to another origin.
    validatorUrl: null,
  });
})();
