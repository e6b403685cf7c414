//! `floorgate validate` on the committed demo fixtures and on a broken copy of them.

use std::process::Command;

fn validate(dir: &std::path::Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_floorgate"))
        .arg("validate")
        .arg(dir)
        .output()
        .expect("run floorgate");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo")
}

#[test]
fn the_demo_fixtures_are_valid() {
    let (ok, stdout, stderr) = validate(&fixtures());
    assert!(ok, "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["tenant"], "acme");
    assert!(summary["tools"].as_u64().unwrap() > 30);
}

#[test]
fn a_broken_catalog_names_the_path_and_the_problem() {
    let dir = std::env::temp_dir().join(format!("floorgate-validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        fixtures().join("directory.json"),
        dir.join("directory.json"),
    )
    .unwrap();
    std::fs::copy(fixtures().join("policy.json"), dir.join("policy.json")).unwrap();
    let mut catalog: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("catalog.json")).unwrap())
            .unwrap();
    catalog["connections"][2]["connector"] = "calcom".into();
    std::fs::write(dir.join("catalog.json"), catalog.to_string()).unwrap();
    let (ok, _, stderr) = validate(&dir);
    std::fs::remove_dir_all(&dir).ok();
    assert!(!ok);
    assert!(
        stderr.contains("connections[2].connector: unknown connector \"calcom\""),
        "{stderr}"
    );
}
