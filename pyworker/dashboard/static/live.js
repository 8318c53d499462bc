// The live refresh's guard: htmx polls each page's #live region (base.html) only while this says
// yes, so that a refresh never throws away what the operator is typing or has opened.
function liveRefreshAllowed() {
  const live = document.getElementById("live");
  if (!live || document.hidden) return false;
  if (live.querySelector("details[open]")) return false;
  const focused = document.activeElement;
  if (focused && live.contains(focused) && focused.matches("input, select, textarea")) return false;
  return !Array.from(live.querySelectorAll("input, textarea, select")).some(edited);
}

function edited(field) {
  if (field.tagName === "SELECT") return Array.from(field.options).some((o) => o.selected !== o.defaultSelected);
  if (field.type === "checkbox" || field.type === "radio") return field.checked !== field.defaultChecked;
  return field.value !== field.defaultValue;
}
