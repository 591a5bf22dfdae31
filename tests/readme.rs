//! README.md's key reference is what the schema generates (as CI checks that committed
//! results are what the experiments produce): edit `src/experiment/schema.rs`, then paste the
//! output of `retrysim schema --markdown` between the markers (`scripts/readme-keys.sh` does).

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
