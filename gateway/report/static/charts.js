// The report page's charts, drawn as inline SVG: grouped bars (a group per label, a bar per
// series) and strips (a dot per item on a line per series). Every text goes in as text
// (textContent), never as markup: names and outputs are the user's and the model's.

const SVG = "http://www.w3.org/2000/svg";
export const PALETTE = ["#3b6fd8", "#e07b39", "#3a9a5b", "#a3489c", "#c9a227", "#5a6b7b"];

export function color(index) {
  return PALETTE[index % PALETTE.length];
}

function node(name, attributes = {}, text = null) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (text !== null) element.textContent = text;
  return element;
}

function titled(element, text) {
  element.append(node("title", {}, text));
  return element;
}

// Grouped bars. `groups`: the labels under the groups; `series`: [{ name, data: { [label]: value } }];
// `data(series, label)`: the bar's data attributes; `format(value)`: its value as a person reads it.
// The bars' heights are from 0 to `max` (default: the largest value).
export function groupedBars({ groups, series, data, format, max = null, className = "bars" }) {
  const barW = 22, barGap = 4, groupGap = 26, height = 180, axisW = 48, labelH = 46, top = 10;
  const groupW = series.length * (barW + barGap) - barGap;
  const width = axisW + groups.length * (groupW + groupGap) + groupGap;
  const values = series.flatMap((s) => Object.values(s.data));
  const scale = max ?? Math.max(0, ...values);
  const svg = node("svg", { class: className, width, height: height + labelH, viewBox: `0 0 ${width} ${height + labelH}`, role: "img" });
  for (const tick of [0, 0.5, 1]) {
    const y = height - (height - top) * tick;
    svg.append(node("line", { x1: axisW, x2: width, y1: y, y2: y, stroke: "#ddd" }));
    svg.append(node("text", { x: axisW - 4, y: y + 4, "text-anchor": "end" }, format(scale * tick)));
  }
  groups.forEach((label, g) => {
    const x0 = axisW + groupGap + g * (groupW + groupGap);
    series.forEach((s, i) => {
      if (!(label in s.data)) return;
      const value = s.data[label];
      const barH = scale > 0 ? (height - top) * (value / scale) : 0;
      const rect = node("rect", {
        class: "bar", x: x0 + i * (barW + barGap), y: height - barH, width: barW, height: Math.max(barH, 1), fill: color(i),
        ...data(s, label),
      });
      svg.append(titled(rect, `${s.name} · ${label}: ${format(value)}`));
    });
    svg.append(node("text", { x: x0 + groupW / 2, y: height + 16, "text-anchor": "middle" }, label));
  });
  return svg;
}

// A strip per series: `series`: [{ name, items: [{ label, value, data }] }], from 0 to the largest value.
export function strips({ series, format, className = "strip" }) {
  const left = 150, stripW = 520, rowH = 34;
  const values = series.flatMap((s) => s.items.map((item) => item.value));
  const top = Math.max(0, ...values) || 1;
  const height = series.length * rowH + 24;
  const svg = node("svg", { class: className, width: left + stripW + 20, height, viewBox: `0 0 ${left + stripW + 20} ${height}`, role: "img" });
  series.forEach((s, i) => {
    const y = i * rowH + rowH / 2;
    svg.append(node("text", { x: left - 8, y: y + 4, "text-anchor": "end" }, s.name));
    svg.append(node("line", { x1: left, x2: left + stripW, y1: y, y2: y, stroke: "#ddd" }));
    for (const item of s.items) {
      const dot = node("circle", { class: "dot", cx: left + (stripW * item.value) / top, cy: y, r: 5, fill: color(i), "fill-opacity": 0.7, ...item.data });
      svg.append(titled(dot, `${item.label}: ${format(item.value)}`));
    }
  });
  const axisY = series.length * rowH + 16;
  svg.append(node("text", { x: left, y: axisY }, format(0)));
  svg.append(node("text", { x: left + stripW, y: axisY, "text-anchor": "end" }, format(top)));
  return svg;
}

// A legend: a swatch and a name per series, in the series' colors.
export function legend(element, names) {
  element.replaceChildren(
    ...names.map((name, i) => {
      const span = document.createElement("span");
      const swatch = document.createElement("i");
      swatch.className = "swatch";
      swatch.style.background = color(i);
      span.append(swatch, name);
      return span;
    }),
  );
}
