//! `report.html`: a run's results as one self-contained page (no network needed to open it): loss
//! over time per island with best-so-far, loss against each parameter, parallel coordinates,
//! learning curves, a sortable table of the trials and the run's settings. Drawn in the browser by
//! Apache ECharts (vendored from npm at a fixed version, `scripts/vendor-echarts.sh`, and inlined)
//! from the data of [`data::report_data`]; our own script (`assets/report/report.js`) only lays
//! the charts out.

pub mod data;

use serde_json::{Map, Value as Json, json};

use crate::config::RunConfig;
use crate::result::RunResult;
use propulate_core::layout::IslandSpec;
use propulate_core::space::SearchSpace;
use propulate_core::topology::TopologySpec;

const TEMPLATE: &str = include_str!("../../assets/report/template.html");
const STYLE: &str = include_str!("../../assets/report/report.css");
const SCRIPT: &str = include_str!("../../assets/report/report.js");
const ECHARTS: &str = include_str!("../../assets/report/echarts-6.1.0.min.js");

/// The run's settings as the report lists them (and `best.json` records them): the propagator and
/// its settings, islands, workers, ranks per worker, migration, the seed and the generations.
pub fn run_settings(config: &RunConfig, workers: usize) -> Map<String, Json> {
    let mut s = Map::new();
    match (&config.propagator, &config.custom_propagator) {
        (Some(spec), _) => {
            s.insert("propagator".into(), json!(spec.name()));
            s.insert("propagator_settings".into(), json!(spec.settings()));
        }
        (None, Some(name)) => {
            s.insert("propagator".into(), json!(name));
        }
        (None, None) => {}
    }
    // As the command line spells them (`--islands 2`, `--island-sizes 3,1`, `--topology ring`).
    s.insert(
        "islands".into(),
        match &config.islands {
            IslandSpec::Count(n) => json!(n),
            IslandSpec::Sizes(sizes) => json!(sizes),
        },
    );
    s.insert("workers".into(), json!(workers));
    if !config.objectives.is_empty() {
        // The run's declared objectives, as the command line spells them (`val_loss:min,acc:max`).
        s.insert("objectives".into(), json!(config.objectives));
    }
    s.insert("ranks_per_worker".into(), json!(config.ranks_per_worker));
    s.insert("migration_probability".into(), json!(config.migration_probability));
    s.insert("pollination".into(), json!(config.pollination));
    s.insert(
        "topology".into(),
        match &config.topology {
            TopologySpec::FullyConnected => json!("fully-connected"),
            TopologySpec::Ring => json!("ring"),
            TopologySpec::Matrix(rows) => json!(rows),
        },
    );
    s.insert("seed".into(), json!(config.seed));
    s.insert("generations".into(), json!(config.generations));
    s
}

/// JSON made safe to sit inside a `<script>` element: no `<` can close it or open a comment.
fn script_json(data: &Json) -> String {
    data.to_string().replace('<', "\\u003c")
}

/// The page for `result` and the run's `settings`.
pub fn report_html(space: &SearchSpace, result: &RunResult, settings: &Map<String, Json>) -> String {
    let data = data::report_data(space, result, settings);
    // Filled in one pass, so that nothing inserted is searched for a placeholder again.
    let mut page = String::with_capacity(TEMPLATE.len() + ECHARTS.len() + SCRIPT.len() + 4096);
    let mut rest = TEMPLATE;
    while let Some(open) = rest.find("{{") {
        let close = rest[open..].find("}}").expect("template placeholders are closed") + open;
        page.push_str(&rest[..open]);
        match &rest[open + 2..close] {
            "style" => page.push_str(STYLE),
            "data" => page.push_str(&script_json(&data)),
            "echarts" => page.push_str(ECHARTS),
            "script" => page.push_str(SCRIPT),
            other => panic!("unknown placeholder {other} in the report template"),
        }
        rest = &rest[close + 2..];
    }
    page.push_str(rest);
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_cannot_close_its_script_element() {
        let j = json!({"reason": "</script><script>alert(1)</script> <!--"});
        let s = script_json(&j);
        assert!(!s.contains('<'));
        assert_eq!(serde_json::from_str::<Json>(&s).unwrap(), j, "still the same JSON");
    }

    #[test]
    fn the_page_is_whole_and_self_contained() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        let result = RunResult {
            best: vec![],
            islands: vec![vec![]],
            trials: vec![],
            evaluations: 0,
            failed: 0,
            wall_s: 0.0,
            consistent: true,
            active_per_island: vec![0],
            emigrated: 0,
            resumed: 0,
            ..RunResult::default()
        };
        let page = report_html(&space, &result, &Map::new());
        assert!(page.starts_with("<!doctype html>"));
        assert!(!page.contains("{{"), "every placeholder filled");
        assert!(page.contains("Apache ECharts") || page.contains("echarts"), "the library inlined");
        for external in ["src=\"http", "href=\"http", "<link "] {
            assert!(!page.contains(external), "nothing fetched: {external}");
        }
    }
}
