// The example capability in the browser (tests/example_capability, a test-only capability): the result view of its
// "example" kind and the GPU page's "example" colour mode (each GPU by its heat: the live example_heat section of
// the runs the page sees, or ?run=<id>'s stored example_heat array).
import { COLORS, UTIL_GRADIENT, UTIL_PIXEL, api, cssPixel, fmt, toast } from "../twin.js";
import { sectionConstants } from "../frames.js";
import { registerColourMode, registerView } from "../registry.js";
import { headlineCards } from "../run_results.js";

registerView("example", (el, s, { run }) => {
  el.innerHTML = `${headlineCards(run.headline ?? [])}
    <section class="panel" id="example-result" data-hot="${s.hot_gpus}"><h3>Example</h3>
      <p>${fmt.int(s.steps)} steps over ${fmt.int(s.gpus)} GPUs: ${fmt.int(s.hot_gpus)} above half heat.</p></section>`;
});

const IDLE = cssPixel(COLORS.idle);

registerColourMode("example", {
  label: "example heat", order: 900,
  async attach(ctx) {
    const st = ctx.state.example = { heat: null, run: 0 };
    const q = new URLSearchParams(location.search), r = Number(q.get("run"));
    if (!r || q.get("color") !== "example") return;
    try {
      const doc = await api(`/api/runs/${r}/results/?names=example_heat&arrays=base64`);
      const a = doc.arrays.example_heat;
      if (a) { st.heat = Uint8Array.from(atob(a.data), (c) => c.charCodeAt(0)); st.run = r; }
    } catch (e) { toast(`run #${r}: ${e.message}`); }
  },
  runFrame(ctx, f) {
    const h = f.sections.example_heat;
    if (!h || h.length !== ctx.grid.n) return false;
    Object.assign(ctx.state.example, { heat: h, run: f.runId });
    return true;
  },
  colorize(ctx, colors) {
    const { heat } = ctx.state.example, { n, gpuZone } = ctx.grid, perZone = new Float64Array(ctx.grid.dims.zones);
    const { max } = sectionConstants("example_heat");
    let hot = 0;
    for (let i = 0; i < n; i++) {
      if (!heat) { colors[i] = IDLE; continue; }
      colors[i] = UTIL_PIXEL[Math.round(255 * Math.min(1, heat[i] / max))];
      if (heat[i] > max / 2) { hot += 1; perZone[gpuZone[i]] += 1; }
    }
    return { hot, perZone };
  },
  zoneFigure: (ctx, v) => `${fmt.int(v)} hot`,
  legend(ctx, counts) {
    const st = ctx.state.example;
    return `<span class="item"><span class="util-scale" style="background:${UTIL_GRADIENT}"></span> heat</span>`
      + `<span class="item" data-example-hot="${counts.hot}">above half heat <b>${fmt.int(counts.hot)}</b></span>`
      + `<span class="item muted">${st.run ? `from ${ctx.live.label(st.run)}` : "no example run yet"}</span>`;
  },
  test: (ctx) => ({ exampleOf: (i) => (ctx.state.example.heat ? ctx.state.example.heat[i] : null) }),
});
