// Starts Swagger UI on the document the page names in data-openapi-url: the page
// writes that URL with the mount point, so this file is the same under any mount.
// It is a file of its own, not an inline script, so the page's
// Content-Security-Policy can refuse every inline script.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");

  // Swagger UI draws these controls with no name a screen reader can say (WCAG
  // 2.2 4.1.2): the servers select inside an empty <label>, each response's
  // examples select, a request body's text box in "Try it out", the Authorize
  // dialog's close button (an icon). Swagger UI has no option for it and CSS
  // cannot name an element, so each gets an aria-label as it appears: React
  // leaves an attribute it does not manage in place, and a control drawn anew is
  // seen here again.
  var NAMES = [
    [".servers select", "Servers"],
    ["select.examples-select-element", "Examples"],
    ["textarea.body-param__text", "Request body"],
    ["button.close-modal", "Close"],
  ];
  // The dialog's buttons read "Authorize" and "Logout" but are named "Apply
  // credentials" and "Remove authorization", so a person naming what they see
  // (speech input) is not understood (2.5.3 Label in Name): without that
  // aria-label, which React sets, the name is the word shown.
  var RENAMED = ".auth-btn-wrapper button[aria-label]";
  function nameControls() {
    NAMES.forEach(function (entry) {
      root.querySelectorAll(entry[0] + ":not([aria-label])").forEach(function (el) {
        el.setAttribute("aria-label", entry[1]);
      });
    });
    root.querySelectorAll(RENAMED).forEach(function (el) {
      el.removeAttribute("aria-label");
    });
  }
  new MutationObserver(nameControls).observe(root, {
    childList: true,
    subtree: true,
    attributes: true,
    attributeFilter: ["aria-label"],
  });

  // An operation's summary is one button that opens it; with deep linking on,
  // Swagger UI also puts a link to the operation inside it, a control inside a
  // control that a keyboard and a screen reader cannot tell apart (WCAG 2.2
  // 4.1.2). This plugin, through Swagger UI's documented wrapComponents, draws
  // the path there as text: opening an operation still puts it in the URL.
  function pathAsText() {
    return {
      wrapComponents: {
        OperationSummaryPath: function (Original, system) {
          return function (props) {
            var operation = props.operationProps.set("isDeepLinkingEnabled", false);
            return system.React.createElement(
              Original,
              Object.assign({}, props, { operationProps: operation }),
            );
          };
        },
      },
    };
  }

  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    domNode: root,
    deepLinking: true,
    plugins: [pathAsText],
    // The default validator badge asks a public service about the document:
    // nothing on this page goes to another origin.
    validatorUrl: null,
  });
})();
