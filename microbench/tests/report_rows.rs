//! The reporting contract: `declare` starts a bench's file with its metadata, `record` and
//! `note` append JSON lines, all under `$MICROBENCH_REPORT_DIR`.

use microbench::report::{self, Against, BenchMeta, FigureSpec, Row, Target};
use microbench::Settings;

#[test]
fn declare_then_record_writes_one_meta_line_and_one_line_per_row() {
    let dir = std::env::temp_dir().join(format!("microbench-report-{}", std::process::id()));
    std::env::set_var(report::REPORT_DIR_ENV, &dir);
    assert_eq!(report::report_dir(), dir);
    let meta = BenchMeta {
        bench: "contract".into(),
        title: "Contract".into(),
        baseline: Some("base".into()),
        subject: Some("ours".into()),
        figures: vec![FigureSpec::new("us", "time", 2)],
        ratio_figures: vec!["us".into()],
        targets: vec![Target {
            description: "fast".into(),
            figure: "us".into(),
            against: Against::BestPeer,
            max_ratio: 0.8,
            groups: Vec::new(),
        }],
        ..BenchMeta::default()
    };
    for _ in 0..2 {
        // A second declare starts the file afresh.
        report::declare(&meta, &Settings::quick()).unwrap();
    }
    report::record(&Row {
        bench: "contract".into(),
        group: "g".into(),
        variant: "ours".into(),
        round: 1,
        figures: vec![("us".into(), Some(1.5)), ("cpu".into(), None)],
    })
    .unwrap();
    report::note("contract", "a remark").unwrap();

    let text = std::fs::read_to_string(dir.join("contract.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["kind"], "meta");
    assert_eq!(lines[0]["baseline"], "base");
    assert_eq!(lines[0]["targets"][0]["against"], "best_peer");
    assert_eq!(lines[0]["settings"]["rounds"], 5);
    assert_eq!(lines[1]["kind"], "row");
    assert_eq!(lines[1]["figures"]["us"], 1.5);
    assert!(lines[1]["figures"]["cpu"].is_null());
    assert_eq!(lines[2]["text"], "a remark");
    std::fs::remove_dir_all(&dir).unwrap();
}
