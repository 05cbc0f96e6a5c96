// The report's stylesheet, inlined into the page (report/html_report.h).
#pragma once

namespace scion::report {

inline constexpr const char* kReportStyle = R"css(
:root { --ink:#1f2933; --muted:#616e7c; --line:#d9dee4; --bg:#f7f8fa; --card:#ffffff;
        --ok:#1e8e3e; --stale:#d08a00; --bad:#c5221f; --accent:#3367d6; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color:var(--ink); background:var(--bg); }
header { background:#24303f; color:#fff; padding:18px 28px; }
header h1 { margin:0 0 4px; font-size:22px; }
header .sub { color:#c3cbd5; font-size:13px; }
nav { display:flex; gap:16px; flex-wrap:wrap; padding:8px 28px; background:#fff; border-bottom:1px solid var(--line);
      position:sticky; top:0; z-index:2; }
nav a { color:var(--accent); text-decoration:none; font-weight:600; font-size:13px; }
main { padding:8px 28px 40px; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:14px 18px; margin:18px 0; }
section h2 { margin:0 0 10px; font-size:17px; }
.note { color:var(--muted); font-size:12.5px; margin:4px 0 10px; }
.summary { display:flex; gap:14px; flex-wrap:wrap; margin-top:12px; }
.summary div { background:rgba(255,255,255,.09); border-radius:6px; padding:6px 12px; }
.summary b { font-size:18px; display:block; }
.scroll { overflow-x:auto; }
table { border-collapse:collapse; font-size:13px; }
th, td { border:1px solid var(--line); padding:5px 8px; text-align:left; vertical-align:top; }
th { background:#eef1f5; font-weight:600; }
td.num { text-align:right; font-variant-numeric:tabular-nums; }
code, .mono { font-family:ui-monospace, "DejaVu Sans Mono", monospace; font-size:12.5px; }
svg text { font-family:system-ui, "DejaVu Sans", sans-serif; }
.lineage-tree .node rect { fill:#fff; stroke:#7a8696; stroke-width:1.4; }
.lineage-tree .node.status-ok rect { stroke:var(--ok); fill:#f1faf3; }
.lineage-tree .node.status-stale rect { stroke:var(--stale); fill:#fff8e6; }
.lineage-tree .node.status-absent rect { stroke:#9aa5b1; stroke-dasharray:5 4; fill:#f5f6f8; }
.lineage-tree .node.status-other rect { stroke:var(--bad); fill:#fdf1f0; }
.lineage-tree .node:hover rect { stroke-width:2.4; }
.lineage-tree .name { font-weight:700; font-size:14px; fill:var(--ink); }
.lineage-tree .meta { font-size:12px; fill:var(--muted); }
.lineage-tree .status-ok .st { fill:var(--ok); } .lineage-tree .status-stale .st { fill:var(--stale); }
.lineage-tree .status-other .st { fill:var(--bad); }
.lineage-tree .metric { font-size:11.5px; fill:var(--accent); }
.lineage-tree .edge path { fill:none; stroke:#7a8696; stroke-width:1.4; }
.lineage-tree .edge-label { font-size:11px; fill:var(--muted); paint-order:stroke; stroke:#fff; stroke-width:3px; }
.lineage-tree .share path { fill:none; stroke:#8e44ad; stroke-width:1.6; stroke-dasharray:6 4; }
.lineage-tree .share text { font-size:11.5px; fill:#8e44ad; text-anchor:middle; paint-order:stroke; stroke:#fff; stroke-width:4px; }
.legend-row { display:flex; gap:16px; flex-wrap:wrap; font-size:12px; color:var(--muted); margin-top:6px; }
.swatch { display:inline-block; width:12px; height:12px; border-radius:3px; vertical-align:-2px; margin-right:4px; border:1.5px solid; }
table.test-matrix td.cell { text-align:center; min-width:92px; font-variant-numeric:tabular-nums; }
table.test-matrix td.cell a { color:inherit; text-decoration:none; display:block; }
table.test-matrix td.cell .delta { font-size:11px; opacity:.85; }
table.test-matrix td.cell .n { font-size:10.5px; opacity:.75; display:block; }
table.test-matrix td.over { outline:2.5px solid var(--bad); outline-offset:-3px; font-weight:700; }
table.test-matrix td.none { background:#f5f6f8; color:#9aa5b1; }
details { margin:8px 0; border:1px solid var(--line); border-radius:6px; padding:6px 10px; background:#fcfcfd; }
details > summary { cursor:pointer; font-weight:600; }
details:target { border-color:var(--accent); box-shadow:0 0 0 2px rgba(51,103,214,.25); }
.cases td { max-width:520px; word-break:break-word; }
.curves { display:flex; flex-wrap:wrap; gap:14px; }
.curve-card { border:1px solid var(--line); border-radius:6px; padding:8px 10px; background:#fff; }
.curve-card h3 { margin:0 0 2px; font-size:14px; }
.chart .frame { fill:none; stroke:#b8c1cc; }
.chart .grid { stroke:#edf0f3; }
.chart .tick, .chart .axis-label { font-size:11px; fill:var(--muted); }
.chart .chart-title { font-size:12.5px; font-weight:600; fill:var(--ink); }
.chart .chart-empty { font-size:12px; fill:var(--muted); }
.chart .series path { fill:none; stroke-width:1.8; }
.chart .legend line { stroke-width:2.5; } .chart .legend text { font-size:11px; fill:var(--ink); }
.chart .s0 path, .chart .s0 line { stroke:#3367d6; } .chart .s0 circle { fill:#3367d6; }
.chart .s1 path, .chart .s1 line { stroke:#e8710a; } .chart .s1 circle { fill:#e8710a; }
.chart .s2 path, .chart .s2 line { stroke:#1e8e3e; } .chart .s2 circle { fill:#1e8e3e; }
.chart .s3 path, .chart .s3 line { stroke:#8e44ad; } .chart .s3 circle { fill:#8e44ad; }
.chart .s4 path, .chart .s4 line { stroke:#c5221f; } .chart .s4 circle { fill:#c5221f; }
.chart .s5 path, .chart .s5 line { stroke:#12939a; } .chart .s5 circle { fill:#12939a; }
.recipes { display:grid; grid-template-columns:repeat(auto-fill, minmax(340px, 1fr)); gap:12px; }
.recipe { border:1px solid var(--line); border-radius:6px; padding:8px 10px; }
.recipe h3 { margin:0 0 6px; font-size:14px; }
.recipe table { width:100%; }
.recipe td:first-child { color:var(--muted); width:30%; }
.empty { color:var(--muted); font-style:italic; }
)css";

}  // namespace scion::report
