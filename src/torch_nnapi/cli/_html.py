"""``check --report`` and ``bench --report``: one self-contained HTML page each.

Everything is inline (CSS, SVG plots drawn here, no script, no font or image from the
network), so the page opens anywhere, offline, and can be attached to a bug report. Plots
carry ``<title>`` tooltips naming each layer or operation and where it comes from.
"""

from __future__ import annotations

import datetime
import html
import math
from collections.abc import Iterable, Sequence

# Plot colours (also what the screenshot test looks for).
OK_COLOUR = "#1f6fd1"
DISAGREE_COLOUR = "#e08a00"
MISMATCH_COLOUR = "#d62728"
PLOT_BACKGROUND = "#f3f6fb"
TYPE_COLOURS = ("#1f6fd1", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                "#7f7f7f")
_VERDICT_COLOURS = {"ok": OK_COLOUR, "reference disagrees": DISAGREE_COLOUR,
                    "drift": DISAGREE_COLOUR, "MISMATCH": MISMATCH_COLOUR}

_STYLE = f"""
body {{ font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 1100px; color: #1d2330; padding: 0 16px; }}
h1 {{ font-size: 22px; margin: 0 0 4px; }}
h2 {{ font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #dde3ec; }}
.sub {{ color: #5b6475; margin: 0 0 16px; }}
.hint {{ background: #fff6db; border-left: 4px solid #e0a800; padding: 8px 12px; }}
.verdict {{ display: inline-block; padding: 6px 12px; border-radius: 6px; font-weight: 600; }}
.good {{ background: #e3f4e6; color: #1d6b2c; }}
.bad {{ background: #fbe4e4; color: #9b1c1c; }}
table {{ border-collapse: collapse; width: 100%; margin: 6px 0; }}
th, td {{ text-align: left; padding: 4px 8px; border-bottom: 1px solid #edf0f5;
          vertical-align: top; }}
th {{ background: #f7f9fc; font-weight: 600; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
code, .loc {{ font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }}
.loc {{ color: #5b6475; }}
.legend span {{ display: inline-block; margin-right: 14px; }}
.swatch {{ display: inline-block; width: 10px; height: 10px; border-radius: 2px;
           margin-right: 4px; }}
svg text {{ font: 11px system-ui, sans-serif; fill: #5b6475; }}
.plot {{ background: {PLOT_BACKGROUND}; border-radius: 6px; }}
"""


def _e(value) -> str:
    return html.escape(str(value))


def _page(title: str, subtitle: str, body: Iterable[str]) -> str:
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>", f'<p class="sub">{_e(subtitle)} &middot; {stamp}</p>',
        *body, "</body></html>", ""])


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()
           ) -> str:
    """``rows`` hold HTML already escaped; columns in ``numeric`` align right."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                        for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _pairs(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column table of names and (escaped) values, without a header."""
    body = "".join(f"<tr><th>{_e(name)}</th><td>{value}</td></tr>" for name, value in rows)
    return f"<table>{body}</table>"


def _legend(items: Sequence[tuple[str, str]]) -> str:
    spans = "".join(f'<span><i class="swatch" style="background:{colour}"></i>{_e(label)}'
                    "</span>" for label, colour in items)
    return f'<p class="legend">{spans}</p>'


# ------------------------------------------------------------------------------ plots

_WIDTH, _HEIGHT = 1060, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 12, 12, 36


def _log_axis(values: Sequence[float]) -> tuple[int, int]:
    positive = [v for v in values if v > 0]
    low = min(positive, default=1e-3)
    high = max(max(positive, default=1.0), 1.0)
    return math.floor(math.log10(low)), math.ceil(math.log10(high)) or 1


def severity_plot(points: Sequence[tuple[float, str, str]], plot_id: str) -> str:
    """Per layer, in network order: (error / tolerance, verdict, tooltip). A log scale with
    the tolerance (1) drawn across."""
    lo, hi = _log_axis([p[0] for p in points])
    if hi <= lo:
        hi = lo + 1
    inner_w, inner_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def y(value: float) -> float:
        v = math.log10(value) if value > 0 else lo
        return _TOP + inner_h * (1 - (min(max(v, lo), hi) - lo) / (hi - lo))

    step = inner_w / max(len(points), 1)
    parts = [f'<svg id="{plot_id}" class="plot" width="{_WIDTH}" height="{_HEIGHT}"'
             f' viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img">']
    for exponent in range(lo, hi + 1):
        gy = y(10.0 ** exponent)
        parts.append(f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{gy:.1f}" y2="{gy:.1f}"'
                     ' stroke="#dde3ec"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{gy + 4:.1f}" text-anchor="end">'
                     f"1e{exponent}</text>")
    ty = y(1.0)
    parts.append(f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}"'
                 f' stroke="{MISMATCH_COLOUR}" stroke-dasharray="6 4"/>')
    parts.append(f'<text x="{_WIDTH - _RIGHT - 4}" y="{ty - 4:.1f}" text-anchor="end">'
                 "tolerance</text>")
    path = " ".join(f"{_LEFT + step * (i + 0.5):.1f},{y(v):.1f}"
                    for i, (v, _, _) in enumerate(points))
    if path:
        parts.append(f'<polyline points="{path}" fill="none" stroke="#9fb3d1"'
                     ' stroke-width="1"/>')
    radius = 3.5 if len(points) < 150 else 2.5
    for i, (value, verdict, tip) in enumerate(points):
        colour = _VERDICT_COLOURS.get(verdict, OK_COLOUR)
        parts.append(f'<circle cx="{_LEFT + step * (i + 0.5):.1f}" cy="{y(value):.1f}"'
                     f' r="{radius}" fill="{colour}"><title>{_e(tip)}</title></circle>')
    parts.append(f'<text x="{_LEFT + inner_w / 2:.0f}" y="{_HEIGHT - 8}"'
                 ' text-anchor="middle">layers, in network order (error / tolerance, log'
                 " scale)</text>")
    parts.append("</svg>")
    return "".join(parts)


def _nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above ``value``."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= value * (1 - 1e-9))


def bar_plot(bars: Sequence[tuple[float, str, str]], plot_id: str, label: str) -> str:
    """Per operation, in run order: (milliseconds, colour, tooltip)."""
    top = _nice_ceiling(max((b[0] for b in bars), default=0.0))
    inner_w, inner_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM
    step = inner_w / max(len(bars), 1)
    parts = [f'<svg id="{plot_id}" class="plot" width="{_WIDTH}" height="{_HEIGHT}"'
             f' viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img">']
    for k in range(5):
        value = top * k / 4
        gy = _TOP + inner_h * (1 - k / 4)
        parts.append(f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{gy:.1f}" y2="{gy:.1f}"'
                     ' stroke="#dde3ec"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{gy + 4:.1f}" text-anchor="end">'
                     f"{value:.3g}</text>")
    width = min(max(step * 0.8, 1.0), 40.0)
    for i, (value, colour, tip) in enumerate(bars):
        height = max(inner_h * value / top, 1.0)
        parts.append(f'<rect x="{_LEFT + step * i + (step - width) / 2:.1f}"'
                     f' y="{_TOP + inner_h - height:.1f}" width="{width:.1f}"'
                     f' height="{height:.1f}" fill="{colour}"><title>{_e(tip)}</title></rect>')
    parts.append(f'<text x="{_LEFT + inner_w / 2:.0f}" y="{_HEIGHT - 8}"'
                 f' text-anchor="middle">{_e(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------------------ check


def check_page(report, model_path: str, plans=(), for_device=()) -> str:
    """The page for ``torch-nnapi check --report`` (``plans``: ``--device``'s, drawn as
    timelines; ``for_device``: those of the model converted for the first device)."""
    verdict = report.verdict()
    good = report.exit_code == 0
    body = [f'<p><span class="verdict {"good" if good else "bad"}">'
            f"{_e(verdict.replace('result: ', ''))}</span></p>"]
    inputs = "; ".join(f"{i['shape']} {i['dtype']}" + (" NHWC" if i.get("nhwc") else "")
                       for i in report.inputs)
    summary = [("inputs", _e(inputs))]
    facts, accuracy = report.conversion, report.accuracy
    if facts.converted:
        summary += [("NNAPI operations", _e(sum(facts.operation_counts.values()))),
                    ("feature level", _e(_level(report.levels.feature_level))),
                    ("layout transposes inserted", _e(len(facts.transposes))),
                    ("conversion time", _e(f"{facts.seconds:.2f} s"))]
        if report.quantization.quantized:
            summary.append(("PyTorch reference", _e(
                f"quantized engine {accuracy.quantized_engine}"
                + (f", checked against {accuracy.alternate_engine}"
                   if accuracy.alternate_engine else ""))))
    body.append(_pairs(summary))
    if facts.unsupported:
        body.extend(_nodes_and_why("Unsupported operations", facts.unsupported))
        if facts.hint:
            body.append(f'<p class="hint">{_e(facts.hint)}</p>')
    if facts.partition is not None:
        body.extend(partition_section(facts.partition))
    if accuracy.layers:
        body.append("<h2>Error along the network</h2>")
        how = " each computed from PyTorch's own input;" if accuracy.isolated else ""
        body.append(f'<p class="sub">Host runtime against eager PyTorch,{_e(how)} error as a'
                    " multiple of its tolerance (below the dashed line: within it).</p>")
        points = [(t.severity, t.verdict,
                   f"{t.kind} %{t.name} {t.shape}: {t.value()} (tolerance {t.limit()})"
                   f" {t.verdict} at {t.location}") for t in accuracy.layers]
        body.append(severity_plot(points, "layer-errors"))
        drift = accuracy.drift_summary()
        if drift:
            body.append(f'<p class="sub">Drift, not a mismatch: {_e(drift)} while every output'
                        " matches, each layer's rounding carried down the network;"
                        " <code>--isolated</code> computes each layer from PyTorch's own input"
                        " to show what it adds alone.</p>")
        body.append(_legend([("within tolerance", OK_COLOUR),
                             ("reference disagrees or drift", DISAGREE_COLOUR),
                             ("over tolerance", MISMATCH_COLOUR)]))
        body.append(_table(["layer", "value", "shape", "error", "verdict", "where"],
                           ((f"<code>{_e(t.kind)}</code>", _e(t.name), _e(t.shape),
                             _e(t.value()), _e(t.verdict),
                             f'<span class="loc">{_e(t.location)}</span>')
                            for t in accuracy.worst_layers(10)), numeric=(3,)))
    if accuracy.outputs:
        body.append("<h2>Outputs</h2>")
        body.append(f'<p class="sub">{_e(accuracy.backend)} against eager PyTorch.</p>')
        body.append(_table(["output", "shape", "error", "verdict"],
                           ((_e(o.name), _e(o.shape), _e(o.describe(accuracy.engines)),
                             _e(o.verdict)) for o in accuracy.outputs)))
    if facts.converted:
        body.extend(_levels(report.levels, facts.operation_counts))
    body.extend(plan_timelines(plans, "On the devices"))
    if for_device:
        body.extend(plan_timelines(for_device, f"Converted for {for_device[0].devices[0].name}"
                                               " (the rest on PyTorch's CPU)"))
    if report.errors:
        body.append("<h2>Errors</h2><ul>" + "".join(f"<li>{_e(e)}</li>" for e in report.errors)
                    + "</ul>")
    return _page(f"torch-nnapi check: {model_path}", "Will this model run on NNAPI, and"
                 " correctly?", body)


def partition_section(partition) -> list[str]:
    """A partitioned model (``check --fallback``): its steps in running order, the tensors
    crossing each region's boundary, and every CPU node with why it stays there."""
    body = [f"<h2>Partitioned: {_e(partition.summary())}</h2>"]
    steps, crossing = [], []
    for step in partition.schedule:
        what, _, number = step.partition(" ")
        if what == "cpu":
            node = partition.cpu[int(number)]
            steps.append((_e("CPU"), f"<code>{_e(node.kind)}</code>",
                          f'<span class="loc">{_e(node.location)}</span>'))
            continue
        r = partition.regions[int(number)]
        ops = ", ".join(f"{name} {n}" for name, n in r.operations.items())
        steps.append((_e(f"region {r.index}"), _e(f"{r.nodes} PyTorch nodes, feature level"
                                                  f" {r.feature_level}: {ops}"),
                      f'<span class="loc">{_e(r.first)} &rarr; {_e(r.last)}</span>'))
        crossing += [(_e(f"region {r.index}"), _e(direction), f"<code>%{_e(t.name)}</code>",
                      _e(f"{t.dtype}{list(t.shape)}"), _e(t.bytes), _e(t.peer))
                     for direction, tensors in (("in", r.inputs), ("out", r.outputs))
                     for t in tensors]
    body.append(_table(["step", "what", "where"], steps))
    body.append("<h2>Tensors crossing the boundaries</h2>")
    body.append(_table(["region", "", "tensor", "type", "bytes", "from / to"], crossing,
                       numeric=(4,)))
    if partition.cpu:
        body.extend(_nodes_and_why("On the CPU, and why", partition.cpu))
    return body


def _nodes_and_why(heading: str, nodes) -> list[str]:
    """PyTorch nodes (anything with a kind, a reason and a location) and why, in a table."""
    return [f"<h2>{_e(heading)}</h2>",
            _table(["PyTorch op", "why", "where"],
                   ((f"<code>{_e(n.kind)}</code>", _e(n.reason),
                     f'<span class="loc">{_e(n.location)}</span>') for n in nodes))]


# One colour per driver of a plan; nnapi-reference has the warning one.
_DEVICE_COLOURS = ("#4c78a8", "#54a24b", "#b279a2", "#9d755d", "#72b7b2")


def plan_timelines(plans, heading: str) -> list[str]:
    """Android's steps on the ``--device`` drivers: one bar per NNAPI model, each step as wide
    as its estimated time, coloured by device, then the steps' table."""
    if not plans:
        return []
    from ..nnapi.devices import REFERENCE_NAME

    body = [f"<h2>{_e(heading)}</h2>",
            '<p class="sub">Android 11\'s partitioning replayed over the device profiles;'
            " widths are estimated times (docs/device_profiles.md).</p>"]
    names = [d.name for d in plans[0].devices]
    colour = {n: MISMATCH_COLOUR if n == REFERENCE_NAME
              else _DEVICE_COLOURS[k % len(_DEVICE_COLOURS)] for k, n in enumerate(names)}
    for k, made in enumerate(plans):
        total = sum(guess.seconds or 0.0 for guess in made.estimate.steps) or 1.0
        steps = list(zip(made.steps, made.estimate.steps, strict=True))
        bar = "".join(_step_cell(s, guess.seconds, total, colour[s.device])
                      for s, guess in steps)
        title = f"region {k}: " if len(plans) > 1 else ""
        body.append(f"<p>{_e(title + made.render()[0])}</p>"
                    f'<div style="display:flex;gap:1px">{bar}</div>')
        body.append(_table(["step", "device", "operations", "estimated", "bytes in"],
                           ((_e(s.index), _e(s.device), _e(len(s.operations)),
                             _e("unknown" if guess.seconds is None
                                else f"{guess.seconds * 1e3:.3g} ms"),
                             _e(sum(t.nbytes or 0 for t in s.inputs if t.producer is not None)))
                            for s, guess in steps), numeric=(2, 3, 4)))
        if made.fallen:
            body.append(_table(["operation", f"on {REFERENCE_NAME} because"],
                               ((_e(f"{f.index} {f.operation}"), _e(f.reason))
                                for f in made.fallen[:50])))
    body.append(_legend([(n, colour[n]) for n in names]))
    return body


def _step_cell(step, seconds: float | None, total: float, colour: str) -> str:
    """One step of a timeline: as wide as its share of the estimated time (a step whose
    estimate is unknown: a sliver, titled so)."""
    title = f"step {step.index}: {step.device}, {len(step.operations)} operations," \
        + (" estimate unknown" if seconds is None else f" {seconds * 1e3:.3g} ms")
    width = 0.5 if seconds is None else max(seconds / total * 100, 0.5)
    return (f'<div title="{_e(title)}" style="width:{width:.2f}%;background:{colour};'
            'height:1.6em"></div>')


def _level(level: int) -> str:
    from ..nnapi.codes import FeatureLevel

    fl = FeatureLevel(level)
    return f"{int(fl)} (Android {fl.android}, API {fl.api_level})"


def _operation_rows(operations, above: int):
    for op in operations:
        yield (f"<code>{_e(op.type)}</code>", _e(op.level),
               _e("; ".join(op.reasons_above(above))),
               f'<span class="loc">{_e(op.origin or "")}</span>')


def _levels(levels, operation_counts) -> list[str]:
    body = ["<h2>Feature level</h2>",
            f"<p>The converted model needs NNAPI feature level {_e(_level(levels.feature_level))}"
            + (", because of:" if levels.forced_by or levels.model_requirements
               else ".") + "</p>"]
    reasons = [r.reason for r in levels.model_requirements if r.level == levels.feature_level]
    if reasons:
        body.append("<ul>" + "".join(f"<li>{_e(r)}</li>" for r in reasons) + "</ul>")
    if levels.forced_by:
        body.append(_table(["NNAPI operation", "level", "why", "from"],
                           _operation_rows(levels.forced_by, levels.feature_level - 1)))
    if levels.target_level is not None and not levels.fits_target:
        body.append(f"<h2>Rejected at target level {_e(levels.target_level)}</h2>")
        body.append(_table(["NNAPI operation", "level", "why", "from"],
                           _operation_rows(levels.rejected, levels.target_level)))
    counts = ", ".join(f"{n} {name}" for name, n in operation_counts.items())
    body.append(f'<p class="sub">Operations: {_e(counts)}</p>')
    return body


# ------------------------------------------------------------------------------ bench


def bench_page(report, module_path: str) -> str:
    """The page for ``torch-nnapi bench --report``."""
    latency = report.latency
    n = latency.nnapi
    rows = [("backend", _e(report.backend)),
            ("compile", _e(_ms(report.first_call.compile_seconds))),
            ("first run", _e(_ms(report.first_call.run_seconds))),
            ("median / p90 / min", _e(f"{_ms(n.median)} / {_ms(n.p90)} / {_ms(n.minimum)}"
                                      f" over {len(n.seconds)} runs"))]
    if latency.eager is not None:
        engine = f", quantized engine {report.quantized_engine}" if report.quantized_engine \
            else ""
        rows.append((f"eager PyTorch (original{engine}) median",
                     _e(_ms(latency.eager.median))))
        rows.append(("NNAPI / eager", _e(f"no ratio: {latency.refusal}" if latency.ratio is None
                                         else f"{latency.ratio:.2f}x (both on"
                                              f" {latency.eager.threads} threads)")))
    body = [_pairs(rows)]
    parts = report.parts
    if parts.regions:
        body.append("<h2>Regions and CPU nodes, each timed alone</h2>")
        rows_ = [(_e(f"region {r.index}"), _e(r.operations), _e(_ms(r.latency.median)))
                 for r in parts.regions]
        if parts.cpu is not None:
            rows_.append((_e("CPU nodes"), "", _e(_ms(parts.cpu.median))))
        body.append(_table(["part", "NNAPI operations", "median"], rows_, numeric=(1, 2)))
    p = report.profile
    if p is not None:
        types = [t.type for t in p.by_type]
        colours = {name: TYPE_COLOURS[i] if i < len(TYPE_COLOURS) else "#b8c2d3"
                   for i, name in enumerate(types)}
        body.append("<h2>Time per operation</h2>")
        body.append(f'<p class="sub">Host runtime, median of {p.runs} runs:'
                    f" {_e(_ms(p.total))} in {len(p.operations)} operations.</p>")
        bars = [(op.seconds * 1e3, colours[op.type],
                 f"#{_number(op)} {op.type} {_ms(op.seconds)} ({op.share:.1%}): "
                 + ", ".join(op.inputs) + " -> " + ", ".join(op.outputs))
                for op in p.operations]
        body.append(bar_plot(bars, "operation-times", "operations, in run order"
                                                      " (milliseconds)"))
        body.append(_legend([(name, colours[name]) for name in types[:len(TYPE_COLOURS)]]))
        body.append("<h2>By operation type</h2>")
        body.append(_table(["operation type", "total", "share", "count"],
                           ((f"<code>{_e(t.type)}</code>", _e(_ms(t.seconds)),
                             _e(f"{t.share:.1%}"), _e(t.count)) for t in p.by_type),
                           numeric=(1, 2, 3)))
        body.append("<h2>Slowest operations</h2>")
        body.append(_table(["#", "operation", "time", "share", "operands"],
                           ((_e(_number(op)), f"<code>{_e(op.type)}</code>",
                             _e(_ms(op.seconds)),
                             _e(f"{op.share:.1%}"),
                             f'<span class="loc">{_e(", ".join(op.inputs))} &rarr;'
                             f' {_e(", ".join(op.outputs))}</span>')
                            for op in p.slowest(15)), numeric=(0, 2, 3)))
    return _page(f"torch-nnapi bench: {module_path}", "Where does the time go?", body)


def _number(op) -> str:
    """An operation's number as the text report gives it: ``r1:12`` in region 1 of a
    partitioned module, else ``12``."""
    return f"r{op.region}:{op.index}" if op.region >= 0 else str(op.index)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"
