//! README.md's key reference is what the schema generates (as CI checks that committed
//! results are what the experiments produce): edit `src/experiment/schema.rs`, then paste the
//! output of `retrysim schema --markdown` between the markers (`scripts/readme-generated.sh` does, with the validation summary).
//! Its validation summary is the one of VALIDATION.md (which CI regenerates).

use retrysim::experiment::schema::markdown::{BEGIN, END, reference};

#[test]
fn readme_key_reference_is_generated_from_the_schema() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme.find(BEGIN).expect("README has the BEGIN KEY REFERENCE marker") + BEGIN.len();
    let end = readme.find(END).expect("README has the END KEY REFERENCE marker");
    let committed = readme[start..end].trim();
    let generated = reference();
    assert!(
        committed == generated.trim(),
        "README's key reference differs from the schema: regenerate it with \
         `cargo run --release -- schema --markdown` and paste it between the markers"
    );
}

const VALIDATION_BEGIN: &str =
    "<!-- BEGIN VALIDATION SUMMARY: copied from VALIDATION.md's Summary; do not edit by hand -->";
const VALIDATION_END: &str = "<!-- END VALIDATION SUMMARY -->";

#[test]
fn readme_validation_summary_is_validation_md_s() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let validation = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/VALIDATION.md")).unwrap();
    let start = readme.find(VALIDATION_BEGIN).expect("README has the BEGIN VALIDATION SUMMARY marker")
        + VALIDATION_BEGIN.len();
    let end = readme.find(VALIDATION_END).expect("README has the END VALIDATION SUMMARY marker");
    let from = validation.find("## Summary\n").expect("VALIDATION.md has a Summary") + "## Summary\n".len();
    let to = from + validation[from..].find("\n## ").expect("a section follows the Summary");
    assert!(
        readme[start..end].trim() == validation[from..to].trim(),
        "README's validation summary differs from VALIDATION.md's: copy the table under \
         VALIDATION.md's \"## Summary\" between the markers"
    );
}
