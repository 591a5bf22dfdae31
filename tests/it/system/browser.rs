//! report.html in a real headless browser (Debian's `chromium`): it loads with no console
//! message, every chart is in the DOM with a non-zero size, and a screenshot is not blank.
//!
//! Needs Debian's `chromium`: the test installs it when it is missing and it runs as root, and
//! otherwise fails saying what to install (a report never opened in a browser is not tested).

use retrysim::report::{ReportOptions, render_report};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's chromium, installed first when it is missing (see `super::provision`).
fn chromium() -> PathBuf {
    PathBuf::from(super::provision(&["chromium", "chromium-browser"], "chromium"))
}

/// Runs headless chromium with the flags that work on this machine kind (no sandbox as root,
/// no background networking: the machine refuses outside hosts), a fresh profile each time.
fn run_chromium(args: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .output()
        .expect("chromium runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chromium failed: {}\n{stderr}", out.status);
    (stdout, stderr)
}

fn url(p: &Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

/// Console lines (errors, warnings, logs) that the page caused.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn report_loads_in_a_browser_with_every_chart_visible() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/storm-rate-sweep");
    for f in ["summary.csv", "runs.csv", "timeseries.csv", "manifest.json"] {
        std::fs::copy(fixture.join(f), tmp.path().join(f)).unwrap();
    }
    let written = render_report(tmp.path(), &ReportOptions::default()).unwrap();
    let charts = written.iter().filter(|p| p.extension().is_some_and(|e| e == "svg")).count();
    let report = tmp.path().join("report.html");

    // 1. The page as shipped: no console message at all (bad SVG markup shows up there).
    let (dom, stderr) = run_chromium(&["--dump-dom".into(), url(&report)]);
    assert!(console_lines(&stderr).is_empty(), "console messages:\n{}", console_lines(&stderr).join("\n"));
    assert_eq!(dom.matches("<figure id=\"chart-").count(), charts, "every chart is in the DOM");
    assert!(dom.contains("<table>"), "the summary table is in the DOM");

    // 2. Sizes need layout: a copy of the page with a probe script that writes each chart's
    // rendered size into the DOM.
    let html = std::fs::read_to_string(&report).unwrap();
    let probe = "<script>document.body.setAttribute('data-sizes', Array.from(document.querySelectorAll(\
                 'figure.chart > svg')).map(s => { const r = s.getBoundingClientRect(); \
                 return s.parentElement.id + '=' + Math.round(r.width) + 'x' + Math.round(r.height); }).join(' '));\
                 </script></body>";
    let probed = tmp.path().join("probed.html");
    std::fs::write(&probed, html.replace("</body>", probe)).unwrap();
    let (dom, stderr) = run_chromium(&["--window-size=1000,800".into(), "--dump-dom".into(), url(&probed)]);
    assert!(console_lines(&stderr).is_empty(), "console messages:\n{}", console_lines(&stderr).join("\n"));
    let sizes = dom.split("data-sizes=\"").nth(1).and_then(|s| s.split('"').next()).expect("the probe ran");
    let sizes: Vec<&str> = sizes.split_whitespace().collect();
    assert_eq!(sizes.len(), charts, "{sizes:?}");
    for s in &sizes {
        // The id itself may hold '=' (a per-point chart's name says its point).
        let (id, wh) = s.rsplit_once('=').unwrap();
        let (w, h) = wh.split_once('x').unwrap();
        let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(w >= 300 && h >= 100, "{id} renders at {w}x{h}");
    }

    // 3. A screenshot of the top of the page (title, facts, comparison, table) is not blank.
    let shot = tmp.path().join("shot.png");
    run_chromium(&[
        "--window-size=800,1400".into(),
        format!("--screenshot={}", shot.display()),
        url(&report),
    ]);
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.line_size / info.width as usize;
    let colours: std::collections::BTreeSet<&[u8]> = buf[..info.buffer_size()].chunks(bpp).collect();
    assert!(colours.len() > 50, "the screenshot has {} colours: blank page?", colours.len());
    if let Ok(keep) = std::env::var("RETRYSIM_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}
