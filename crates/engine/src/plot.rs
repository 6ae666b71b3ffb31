//! `progress.svg`: every evaluation's loss against the time it finished, one colour per island, with
//! each island's best-so-far as a step line and the global best in black. Plain SVG, written by hand
//! so that a run's plots need no plotting library and open in any browser.

use std::fmt::Write as _;

use propulate_core::individual::Individual;

/// Points drawn at most; beyond this every k-th evaluation is drawn (the lines use all of them).
pub const MAX_POINTS: usize = 5000;

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 8] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

/// An evaluation placed on the plot: seconds since the first evaluation started, loss, island.
struct Point {
    t: f64,
    loss: f64,
    island: usize,
}

/// Maps data to pixels; the loss axis is logarithmic when every loss is positive.
struct Axes {
    t_max: f64,
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axes {
    fn new(points: &[Point]) -> Self {
        let t_max = points.iter().map(|p| p.t).fold(0.0, f64::max).max(1e-9);
        let log = points.iter().all(|p| p.loss > 0.0);
        let y = |l: f64| if log { l.log10() } else { l };
        let lo = points.iter().map(|p| y(p.loss)).fold(f64::INFINITY, f64::min);
        let hi = points.iter().map(|p| y(p.loss)).fold(f64::NEG_INFINITY, f64::max);
        let pad = if hi > lo { 0.02 * (hi - lo) } else { 0.5 };
        Axes { t_max, lo: lo - pad, hi: hi + pad, log }
    }

    fn x(&self, t: f64) -> f64 {
        LEFT + t / self.t_max * (WIDTH - LEFT - RIGHT)
    }

    fn y(&self, loss: f64) -> f64 {
        let v = if self.log { loss.log10() } else { loss };
        TOP + (self.hi - v) / (self.hi - self.lo) * (HEIGHT - TOP - BOTTOM)
    }

    fn loss_label(&self, v: f64) -> String {
        if self.log { format!("{:.1e}", 10f64.powf(v)) } else { format!("{v:.3e}") }
    }
}

/// The plot of `trials` (any order) as an SVG document; `islands` sets the colours and lines.
pub fn progress_svg(trials: &[Individual], islands: usize) -> String {
    let t0 = trials.iter().map(|i| i.start_us).min().unwrap_or(0);
    let mut points: Vec<Point> = trials
        .iter()
        .filter(|i| i.loss.is_finite())
        .map(|i| Point {
            // Saturating: start times read back from a journal can be any 64-bit number.
            t: i.start_us.saturating_sub(t0) as f64 * 1e-6 + i.duration_s,
            loss: i.loss,
            island: i.id.island as usize,
        })
        .collect();
    points.sort_by(|a, b| a.t.total_cmp(&b.t));
    let failed = trials.len() - points.len();

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
    let mut title = format!("{} evaluations", trials.len());
    if failed > 0 {
        let _ = write!(title, " ({failed} failed, not drawn)");
    }
    let _ = writeln!(svg, r#"<text x="{LEFT}" y="24" font-size="14">loss over time: {title}</text>"#);
    if points.is_empty() {
        let _ = writeln!(svg, r#"<text x="{LEFT}" y="{}">no finite loss to plot</text>"#, HEIGHT / 2.0);
        svg.push_str("</svg>\n");
        return svg;
    }
    let axes = Axes::new(&points);
    draw_axes(&mut svg, &axes);

    let stride = points.len().div_ceil(MAX_POINTS);
    for p in points.iter().step_by(stride) {
        let _ = writeln!(
            svg,
            r#"<circle cx="{:.1}" cy="{:.1}" r="1.5" fill="{}" fill-opacity="0.5"/>"#,
            axes.x(p.t),
            axes.y(p.loss),
            COLOURS[p.island % COLOURS.len()]
        );
    }
    for island in 0..islands {
        let line = best_so_far(points.iter().filter(|p| p.island == island), &axes);
        let colour = COLOURS[island % COLOURS.len()];
        let _ = writeln!(svg, r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{line}"/>"#);
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" fill="{colour}">island {island}</text>"#,
            WIDTH - RIGHT - 70.0,
            TOP + 16.0 * (island as f64 + 1.0)
        );
    }
    let line = best_so_far(points.iter(), &axes);
    let _ = writeln!(svg, r#"<polyline fill="none" stroke="black" stroke-width="2" points="{line}"/>"#);
    svg.push_str("</svg>\n");
    svg
}

/// The running minimum as polyline points: a step at each improvement, flat to the last point.
fn best_so_far<'a>(points: impl Iterator<Item = &'a Point>, axes: &Axes) -> String {
    let mut out = String::new();
    let mut best = f64::INFINITY;
    let mut last_t = 0.0;
    for p in points {
        last_t = p.t;
        if p.loss < best {
            if best.is_finite() {
                let _ = write!(out, "{:.1},{:.1} ", axes.x(p.t), axes.y(best));
            }
            best = p.loss;
            let _ = write!(out, "{:.1},{:.1} ", axes.x(p.t), axes.y(best));
        }
    }
    if best.is_finite() {
        let _ = write!(out, "{:.1},{:.1}", axes.x(last_t), axes.y(best));
    }
    out
}

fn draw_axes(svg: &mut String, axes: &Axes) {
    let (x0, x1, y0, y1) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM, TOP);
    let _ = writeln!(svg, r#"<path d="M{x0},{y1} V{y0} H{x1}" fill="none" stroke="black"/>"#);
    for k in 0..=4 {
        let f = f64::from(k) / 4.0;
        let t = f * axes.t_max;
        let x = axes.x(t);
        let _ = writeln!(svg, r#"<text x="{x:.1}" y="{}" text-anchor="middle">{t:.3}</text>"#, y0 + 16.0);
        let v = axes.hi - f * (axes.hi - axes.lo);
        let y = TOP + f * (HEIGHT - TOP - BOTTOM);
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            x0 - 6.0,
            y + 4.0,
            axes.loss_label(v)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">seconds since the first evaluation started</text>"#,
        (x0 + x1) / 2.0,
        HEIGHT - 12.0
    );
    let scale = if axes.log { "loss (log scale)" } else { "loss" };
    let _ = writeln!(
        svg,
        r#"<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">{scale}</text>"#,
        (y0 + y1) / 2.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use propulate_core::individual::IndividualId;

    fn trial(island: u32, generation: u64, loss: f64) -> Individual {
        let mut i = Individual::new(Vec::new());
        i.id = IndividualId { island, worker: island, generation };
        i.loss = loss;
        i.start_us = 1_000_000 + 1000 * generation as i64;
        i.duration_s = 1e-4;
        i
    }

    fn count(svg: &str, what: &str) -> usize {
        svg.matches(what).count()
    }

    #[test]
    fn one_point_per_finite_evaluation_and_a_line_per_island_plus_the_global_best() {
        let mut trials: Vec<Individual> = (0..50).map(|g| trial((g % 2) as u32, g, 100.0 / (g + 1) as f64)).collect();
        trials[7].loss = f64::INFINITY;
        trials[7].failure = Some("the loss is NaN".into());
        let svg = progress_svg(&trials, 2);
        assert_eq!(count(&svg, "<circle"), 49);
        assert_eq!(count(&svg, "<polyline"), 3);
        assert!(svg.contains("(1 failed, not drawn)"));
        assert!(svg.contains("log scale"), "positive losses get a log axis");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    }

    #[test]
    fn the_global_best_line_ends_at_the_best_loss() {
        let trials: Vec<Individual> =
            [5.0, 3.0, 4.0, 1.0, 2.0].iter().enumerate().map(|(g, &l)| trial(0, g as u64, l)).collect();
        let svg = progress_svg(&trials, 1);
        let axes = Axes::new(
            &trials
                .iter()
                .map(|i| Point { t: (i.start_us - 1_000_000) as f64 * 1e-6 + 1e-4, loss: i.loss, island: 0 })
                .collect::<Vec<_>>(),
        );
        let global = svg.lines().find(|l| l.contains(r#"stroke="black" stroke-width="2""#)).unwrap();
        let last = global.rsplit("points=\"").next().unwrap().trim_end_matches("\"/>").rsplit(' ').next().unwrap();
        let y: f64 = last.split(',').nth(1).unwrap().parse().unwrap();
        assert!((y - axes.y(1.0)).abs() < 0.1, "{last} vs {}", axes.y(1.0));
        // Steps down at 3.0 and 1.0, never up to 4.0 or 2.0.
        assert!(!global.contains(&format!(",{:.1} ", axes.y(4.0))));
    }

    #[test]
    fn negative_losses_use_a_linear_axis_and_many_points_are_thinned() {
        let trials: Vec<Individual> = (0..12_000).map(|g| trial(0, g, -25.0 + 1.0 / (g + 1) as f64)).collect();
        let svg = progress_svg(&trials, 1);
        assert!(!svg.contains("log scale"));
        assert!(count(&svg, "<circle") <= MAX_POINTS);
        assert!(count(&svg, "<circle") >= MAX_POINTS / 2);
    }

    #[test]
    fn no_finite_loss_is_a_valid_empty_plot() {
        let mut t = trial(0, 0, f64::INFINITY);
        t.failure = Some("x".into());
        for svg in [progress_svg(&[t], 1), progress_svg(&[], 1)] {
            assert!(svg.contains("no finite loss to plot"));
            assert!(svg.ends_with("</svg>\n"));
        }
    }
}
