// Optional: "Copy" buttons for the config snippets. Everything works without this script;
// the buttons stay hidden when it does not run.
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  button.hidden = false;
  button.addEventListener("click", function () {
    var text = document.getElementById(button.dataset.copy).textContent;
    var done = function () { button.textContent = "Copied"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () {});
    } else {
      var range = document.createRange();
      range.selectNodeContents(document.getElementById(button.dataset.copy));
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
  });
});
