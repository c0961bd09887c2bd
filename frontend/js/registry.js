// What the capabilities add to the shared pages, by name. Each capability's browser modules (its package's BROWSER
// in twin/capabilities/<cap>/__init__.py, embedded in every page as #twin-capabilities by web/base.html) register
//   - result views: registerView(name, render), render(el, summary, {cluster, run, published}) draws the results of
//     a run whose kind declares `view=name` (run_view.js; run_results.js registers the generic ones: summary);
//   - GPU colour modes: registerColourMode(name, mode) for the GPU page (gpus.js, which registers the generic ones:
//     job, health, utilization). A mode is
//       {label, order,                      // the select's text, its position (lowest first)
//        prefetch?(page),                   // at page start, before the grid data (page: {canvas, clusterName,
//                                           //   scope, query}): e.g. start a read; its result is ctx.prefetched[name]
//        attach?(ctx),                      // async, once the grid is built: the mode's state in ctx.state[name]
//        frame?(ctx, f),                    // every cluster-stream frame (as decoded): true when it changed the mode
//        runFrame?(ctx, f),                 // a frame of a run, accepted (fresh, of this page's GPUs): true as above
//        colorize(ctx, colors) -> counts,   // a pixel (twin.js cssPixel) per GPU into `colors`; the legend's
//                                           //   figures and `perZone` (one number per zone)
//        zoneFigure(ctx, v, total) -> text, // a zone label's figure from perZone[z] and the zone's GPUs
//        legend(ctx, counts) -> html,       // the legend's items
//        holder?(ctx) -> {of, groups, attr, plural}, // GPUs held beyond a run in flight (a placed training job):
//                                           //   of[i] 0 or 1 + its group in groups [{id, color, label}]; the
//                                           //   default mode colours them first, its legend names them first
//                                           //   (data-<attr>="<id>")
//        hover?(ctx, i, active) -> html,    // rows (<tr>) of GPU i's tooltip, asked of every mode (active: shown)
//        test?(ctx) -> {name: fn}}          // hooks added to twin.gpuGrid for the end-to-end tests
//     ctx is gpus.js's page: {grid, inv, live, state, prefetched, page, redraw(), renderLegend(), legendItem(...)}.
// loadCapabilities() imports every capability module once; the pages await it before they look a name up.
const views = new Map(), modes = new Map();
let loading = null;

/** Register the result view `name` (a kind's `view`). */
export function registerView(name, render) { views.set(name, render); }

/** Register the GPU colour mode `name` (see above). */
export function registerColourMode(name, mode) { modes.set(name, { name, order: 100, ...mode }); }

/** The result view `name`, else the generic summary view. */
export function view(name) { return views.get(name) ?? views.get("summary"); }

/** Whether a result view `name` is registered. */
export function hasView(name) { return views.has(name); }

/** The colour modes, in their order: [{name, label, order, ...}]. */
export function colourModes() {
  return [...modes.values()].sort((a, b) => a.order - b.order || a.name.localeCompare(b.name));
}

/** The colour mode `name`, or undefined. */
export function colourMode(name) { return modes.get(name); }

/** The URLs of the capabilities' browser modules, as the page embeds them (#twin-capabilities). */
export function capabilityModules() {
  const el = globalThis.document?.getElementById("twin-capabilities");
  return el ? JSON.parse(el.textContent) : [];
}

/** Import every capability's browser modules (once per page); resolves when all have registered. A module that
 *  fails to load is reported on the console and left out (its views fall back to the summary view). */
export function loadCapabilities() {
  loading ??= Promise.all(capabilityModules().map((url) => import(url).catch((e) => {
    console.error(`capability module ${url}: ${e.message}`);
  }))).then(() => undefined);
  return loading;
}
