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

/// A screenshot of `page` in a window of `size` into `shot`, checked: that size, and not
/// blank (more than 50 colours).
fn screenshot(page: &Path, size: (u32, u32), shot: &Path) {
    run_chromium(&[
        format!("--window-size={},{}", size.0, size.1),
        format!("--screenshot={}", shot.display()),
        url(page),
    ]);
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), size, "the screenshot's size");
    let bpp = info.line_size / info.width as usize;
    let colours: std::collections::BTreeSet<&[u8]> = buf[..info.buffer_size()].chunks(bpp).collect();
    assert!(colours.len() > 50, "the screenshot has {} colours: blank page?", colours.len());
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
    screenshot(&report, (800, 1400), &shot);
    if let Ok(keep) = std::env::var("RETRYSIM_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// The first screen of a two-key sweep with a metastable region: a small experiment
/// (tests/fixtures/storm-grid.toml, 2 s to run) run with `--set`, opened at 1200 x 900.
#[test]
fn the_first_screen_names_the_metastable_cells_and_the_page_shows_what_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("grid");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/storm-grid.toml");
    // A change that leaves the results alone (the file's value), to see it reported.
    let run = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--threads", "2", "--set", "client.max_attempts=4", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    // The cells the verdict must name: summary.csv's metastable cells of `immediate`.
    let mut reader = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (s, m, d, t) =
        (col("strategy"), col("metastable"), col("server.faults[0].duration"), col("client.timeout"));
    let mut storm = Vec::new();
    for r in reader.records() {
        let r = r.unwrap();
        if &r[s] == "immediate" && r[m].parse::<f64>().unwrap() > 0.0 {
            storm.push((r[d].to_string(), r[t].to_string()));
        }
        if &r[s] == "no-retries" {
            assert_eq!(&r[m], "0", "no-retries is never metastable here");
        }
    }
    let expected: Vec<(String, String)> = [("1s", "300ms"), ("3s", "300ms"), ("6s", "300ms"), ("6s", "2s")]
        .map(|(a, b)| (a.into(), b.into()))
        .to_vec();
    assert_eq!(storm, expected, "the fixture's metastable region changed");
    let sentence = "metastable in 4 of 6 cells: every cell with server.faults[0].duration <= 3s and \
                    client.timeout = 300ms, and every cell with server.faults[0].duration = 6s";

    // The verdict's place on the page, from layout: a probe script writes its box and text.
    let report = out.join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    let probe = "<script>const v = document.getElementById('verdict').getBoundingClientRect(); \
                 const e = document.getElementById('experiment'); \
                 document.body.setAttribute('data-verdict', Math.round(v.top) + ' ' + Math.round(v.bottom)); \
                 document.body.setAttribute('data-first-screen', Array.from(document.querySelectorAll('#verdict li')) \
                 .filter(li => li.getBoundingClientRect().bottom <= 900).map(li => li.textContent).join(' | ')); \
                 document.body.setAttribute('data-experiment', e.textContent.replace(/\"/g, \"'\")); \
                 const first = document.querySelector('#summary td'); \
                 document.body.setAttribute('data-frozen', getComputedStyle(first).position + ' ' + \
                 getComputedStyle(first.closest('.scroll')).overflowX);</script></body>";
    let probed = out.join("probed.html");
    std::fs::write(&probed, html.replace("</body>", probe)).unwrap();
    let (dom, stderr) = run_chromium(&["--window-size=1200,900".into(), "--dump-dom".into(), url(&probed)]);
    assert!(console_lines(&stderr).is_empty(), "console messages:\n{}", console_lines(&stderr).join("\n"));
    let attr = |name: &str| -> String {
        let start = format!("{name}=\"");
        let rest = dom.split(&start).nth(1).unwrap_or_else(|| panic!("the probe did not set {name}"));
        rest.split('"').next().unwrap().replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    };
    let verdict_box: Vec<i64> = attr("data-verdict").split(' ').map(|v| v.parse().unwrap()).collect();
    assert!(verdict_box[1] <= 900, "the verdict ends at {} px, below the first screen", verdict_box[1]);
    let first_screen = attr("data-first-screen");
    assert!(first_screen.contains("immediate: worst at"), "{first_screen}");
    assert!(
        first_screen.contains(sentence),
        "the first screen does not name the metastable cells:\n{first_screen}"
    );
    assert!(first_screen.contains("no-retries: "), "{first_screen}");

    // Wide tables scroll sideways inside their frame, their first column frozen.
    assert_eq!(attr("data-frozen"), "sticky auto");

    // The experiment section: the command line, the change, and the experiment as run.
    let experiment = attr("data-experiment");
    assert!(experiment.contains("--set client.max_attempts=4"), "{experiment}");
    assert!(experiment.contains("changes against the file--set client.max_attempts=4"), "{experiment}");
    assert!(experiment.contains("The experiment as run, every change applied"), "{experiment}");
    assert!(experiment.contains("retrysim run"), "the command line: {experiment}");

    // A screenshot of the first screen is not blank.
    screenshot(&report, (1200, 900), &tmp.path().join("first-screen.png"));

    // The recovery charts draw a never-marker (a ring in the strategy's colour, rendered with
    // a size) for each cell whose runs did not all recover: immediate's four metastable
    // cells here, per runs.csv, and none for no-retries.
    let mut reader = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (s, rec, meta) = (col("strategy"), col("recovery_time_s"), col("metastable"));
    let (d, t) = (col("server.faults[0].duration"), col("client.timeout"));
    let mut never_cells = std::collections::BTreeSet::new();
    for r in reader.records() {
        let r = r.unwrap();
        if r[rec].is_empty() && !r[meta].is_empty() {
            never_cells.insert((r[s].to_string(), r[d].to_string(), r[t].to_string()));
        }
    }
    let immediate: Vec<(String, String)> =
        never_cells.iter().filter(|c| c.0 == "immediate").map(|c| (c.1.clone(), c.2.clone())).collect();
    let mut storm_cells = expected.clone();
    storm_cells.sort();
    assert_eq!(immediate, storm_cells, "never-recovered cells are the metastable ones");
    assert_eq!(never_cells.len(), expected.len(), "no-retries always recovers: {never_cells:?}");
    let probe = "<script>document.body.setAttribute('data-never', Array.from(document.querySelectorAll(\
                 'figure[id^=\"chart-recovery_time_s-vs-\"]')).map(f => f.id + '=' + Array.from(f.querySelectorAll(\
                 'circle[r=\"8\"][fill=\"none\"]')).filter(c => { const b = c.getBoundingClientRect(); \
                 return b.width > 0 && b.height > 0; }).map(c => c.getAttribute('stroke')).join(',')).join(' '));</script></body>";
    std::fs::write(&probed, html.replace("</body>", probe)).unwrap();
    let (dom, _) = run_chromium(&["--window-size=1200,900".into(), "--dump-dom".into(), url(&probed)]);
    let never = dom.split("data-never=\"").nth(1).and_then(|v| v.split('"').next()).expect("the probe ran");
    let colour = |s: usize| {
        let c = retrysim::report::chart::strategy_color(s);
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    };
    let charts: Vec<&str> = never.split(' ').collect();
    assert_eq!(charts.len(), 2, "one recovery chart per swept key: {never}");
    for chart in charts {
        let (id, rings) = chart.rsplit_once('=').unwrap();
        let rings: Vec<&str> = rings.split(',').filter(|r| !r.is_empty()).collect();
        // Each metastable cell is one position in one panel of either chart.
        assert_eq!(rings.len(), expected.len(), "{id}: {rings:?}");
        assert!(rings.iter().all(|r| *r == colour(0)), "{id}: a ring not in immediate's colour: {rings:?}");
    }

    // A re-run with another sweep into the same folder: the page and charts/ hold only the
    // new run's charts, none of the two-key sweep's (its heatmaps, its per-point charts).
    let rerun = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("run")
        .arg(&file)
        .args([
            "--quiet",
            "--threads",
            "2",
            "--set",
            "sweep={ \"client.timeout\" = [\"300ms\", \"2s\"] }",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    let files: std::collections::BTreeSet<String> = std::fs::read_dir(out.join("charts"))
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".svg").map(String::from))
        .collect();
    assert!(
        files.iter().all(|f| !f.contains("server.faults") && !f.starts_with("heatmap-")),
        "stale: {files:?}"
    );
    let (dom, stderr) = run_chromium(&["--window-size=1200,900".into(), "--dump-dom".into(), url(&report)]);
    assert!(console_lines(&stderr).is_empty(), "console messages:\n{}", console_lines(&stderr).join("\n"));
    let shown: std::collections::BTreeSet<String> = dom
        .split("<figure id=\"chart-")
        .skip(1)
        .map(|f| f.split('"').next().unwrap().replace("&amp;", "&"))
        .collect();
    assert_eq!(shown, files, "the page shows exactly the charts in charts/");
}
