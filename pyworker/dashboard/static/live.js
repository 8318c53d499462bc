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
  if (field.tagName === "SELECT") {
    // With no option marked selected, a select starts on its first.
    const start = Array.from(field.options).findIndex((option) => option.defaultSelected);
    return field.selectedIndex !== Math.max(start, 0);
  }
  if (field.type === "checkbox" || field.type === "radio") return field.checked !== field.defaultChecked;
  return field.value !== field.defaultValue;
}
