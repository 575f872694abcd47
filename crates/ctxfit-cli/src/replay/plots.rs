//! `ctxfit replay`'s pictures: `--frontier` (tokens and cost saved against recall) and `--plot` (each session's
//! cost against `none`, sorted).

use super::*;

/// Tokens saved (against `none`) over recall, one labelled point per policy.
pub(super) fn frontier(path: &Path, rows: &[PolicyRow]) -> Result<()> {
    use plotters::prelude::*;
    // policies at the same point share one label
    let mut points: Vec<(String, f64, f64)> = Vec::new();
    for r in rows {
        let Some(saved) = r.tokens_saved else {
            continue;
        };
        let (recall, saved) = (100.0 * r.recall, 100.0 * saved);
        match points
            .iter_mut()
            .find(|p| (p.1 - recall).abs() < 0.05 && (p.2 - saved).abs() < 0.05)
        {
            Some(p) => p.0 = format!("{}, {}", p.0, r.policy),
            None => points.push((r.policy.clone(), recall, saved)),
        }
    }
    // and the cost saved under the first price model, a triangle beside each policy's circle
    let costs: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| {
            let vs = r.cost_vs_none.values().next().copied()?;
            r.tokens_saved.map(|_| (100.0 * r.recall, -100.0 * vs))
        })
        .collect();
    let low_recall = points.iter().map(|p| p.1).fold(100.0, f64::min);
    let x_from = (low_recall / 10.0).floor() * 10.0;
    let top = (points.iter().map(|p| p.2))
        .chain(costs.iter().map(|c| c.1))
        .fold(10.0, f64::max);
    let bottom = costs.iter().map(|c| c.1).fold(-1.0, f64::min).floor();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 560)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("drawing the frontier: {e}");
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "saved vs reference recall: tokens (circles), cost (triangles); oracle reads the future",
                ("sans-serif", 18),
            )
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x_from..100.0, bottom..(top * 1.1).ceil())
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("reference recall (%)")
            .y_desc("saved vs none (%)")
            .draw()
            .map_err(|e| err(&e))?;
        for (recall, saved) in &costs {
            chart
                .draw_series(std::iter::once(TriangleMarker::new(
                    (*recall, *saved),
                    6,
                    BLACK.mix(0.6).filled(),
                )))
                .map_err(|e| err(&e))?;
        }
        for (i, (name, recall, saved)) in points.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(std::iter::once(Circle::new(
                    (*recall, *saved),
                    5,
                    color.filled(),
                )))
                .map_err(|e| err(&e))?;
            chart
                .draw_series(std::iter::once(Text::new(
                    name.clone(),
                    (*recall, *saved),
                    ("sans-serif", 14).into_font(),
                )))
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    write_atomically(path, svg.as_bytes())
}

/// Each session's cost against the same session under `none` (under `model`'s prices), sorted, one line per
/// policy: the tail that totals hide, beside the 3% the regret bound allows.
pub(super) fn plot(
    path: &Path,
    replays: &[SessionReplay],
    policies: &[Policy],
    model: PriceModel,
) -> Result<()> {
    use plotters::prelude::*;
    let prices = model.prices();
    // against what the logs say was billed where they record it (Claude Code's), as the figures are — the sessions
    // whose logs record a bill; else on the messages the logs show, every session
    let billed = replays
        .iter()
        .any(|r| r.policy == "none" && r.billed().is_some());
    let cost = |r: &SessionReplay| {
        let tokens = if billed {
            r.billed().map(|(_, cache)| cache)
        } else {
            Some(r.cache_tokens())
        };
        tokens.map(|cache| prices.cost(cache))
    };
    // replays come in session order under every policy: the n-th of a policy is the n-th under none
    let none: Vec<Option<f64>> = replays
        .iter()
        .filter(|r| r.policy == "none")
        .map(cost)
        .collect();
    let sessions = none.iter().filter(|c| c.is_some_and(|c| c > 0.0)).count();
    let series: Vec<(String, Vec<f64>)> = policies
        .iter()
        .filter(|p| p.name() != "none")
        .map(|p| {
            let mut ratios: Vec<f64> = replays
                .iter()
                .filter(|r| r.policy == p.name())
                .zip(&none)
                .filter_map(|(r, base)| {
                    let base = base.filter(|&b| b > 0.0)?;
                    Some(100.0 * (cost(r)? / base - 1.0))
                })
                .collect();
            ratios.sort_by(f64::total_cmp);
            (p.name().to_owned(), ratios)
        })
        .collect();
    let values = || series.iter().flat_map(|(_, v)| v.iter().copied());
    let low = values().fold(-10.0, f64::min).floor();
    let high = values().fold(10.0, f64::max).ceil();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 560)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("drawing the plot: {e}");
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "each session's cost against none{} ({} prices), sorted",
                    if billed { "'s bill" } else { "" },
                    model.name()
                ),
                ("sans-serif", 22),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..100.0, low..high + 1.0)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(if billed {
                format!(
                    "sessions, cheapest first (%): the {sessions} of {} whose logs record what was billed",
                    none.len()
                )
            } else {
                "sessions, cheapest first (%)".to_owned()
            })
            .y_desc("cost vs none (%)")
            .draw()
            .map_err(|e| err(&e))?;
        // the regret bound's 3%
        chart
            .draw_series(LineSeries::new(
                [(0.0, 3.0), (100.0, 3.0)],
                BLACK.mix(0.4).stroke_width(1),
            ))
            .map_err(|e| err(&e))?
            .label("+3%")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
        for (i, (name, ratios)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let n = ratios.len().max(1) as f64;
            chart
                .draw_series(LineSeries::new(
                    ratios
                        .iter()
                        .enumerate()
                        .map(|(k, y)| (100.0 * (k as f64 + 0.5) / n, *y)),
                    color.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    write_atomically(path, svg.as_bytes())
}
