/** The console's one script, served at /assets/console.js: progressive enhancement only. */
export const CONSOLE_JS = String.raw`// Progressive enhancement only: every page works without this file.
(function () {
  'use strict';

  // Copy buttons: <button data-copy-target="ID" hidden> copies the text of #ID.
  document.querySelectorAll('[data-copy-target]').forEach(function (button) {
    var target = document.getElementById(button.getAttribute('data-copy-target'));
    if (!target) return;
    var status = button.parentElement && button.parentElement.querySelector('.copy-status');
    button.hidden = false;
    button.addEventListener('click', function () {
      var text = target.textContent.trim();
      var done = function () {
        button.textContent = 'Copied';
        if (status) status.textContent = 'Copied to the clipboard.';
        setTimeout(function () { button.textContent = 'Copy'; }, 2500);
      };
      var fallback = function () {
        var range = document.createRange();
        range.selectNodeContents(target);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        try { if (document.execCommand('copy')) return done(); } catch (e) { /* fall through */ }
        if (status) status.textContent = 'Selected: press Ctrl+C (or ⌘C) to copy.';
      };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, fallback);
      else fallback();
    });
  });

  // Password choices (accounts): typing a password selects "a password I type now", so what is typed is what is used.
  document.querySelectorAll('input[name="method"][value="password"]').forEach(function (option) {
    if (!option.form) return;
    ['password', 'confirm'].forEach(function (name) {
      var field = option.form.elements.namedItem(name);
      if (!field || !field.addEventListener) return;
      field.addEventListener('input', function () {
        if (field.value !== '') option.checked = true;
      });
    });
  });

  // The provider form: only the chosen kind's fields are shown, and the others' are not sent.
  document.querySelectorAll('select[data-kind-select]').forEach(function (select) {
    var form = select.form;
    if (!form) return;
    var show = function () {
      form.querySelectorAll('[data-kinds]').forEach(function (block) {
        var on = block.getAttribute('data-kinds').split(' ').indexOf(select.value) !== -1;
        block.hidden = !on;
        block.querySelectorAll('input, textarea, select').forEach(function (input) { input.disabled = !on; });
      });
    };
    select.addEventListener('change', show);
    show();
  });

  // Live refresh: <main data-refresh="SECONDS"> reloads its content while the tab is visible.
  var main = document.querySelector('main[data-refresh]');
  if (main && window.fetch && window.DOMParser) {
    var seconds = Math.max(5, Number(main.getAttribute('data-refresh')) || 15);
    setInterval(function () {
      if (document.hidden || main.contains(document.activeElement) && document.activeElement !== main) return;
      fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' })
        .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
        .then(function (text) {
          var fresh = new DOMParser().parseFromString(text, 'text/html').querySelector('main');
          if (fresh) main.innerHTML = fresh.innerHTML;
        })
        .catch(function () { /* keep what is shown; try again next time */ });
    }, seconds * 1000);
  }
})();
`;
