//! Lineage benchmark: load time, peak memory and blast-radius time per node, on the
//! real hubspot manifest and on copies of it scaled to 10k and 100k nodes.
//!
//!     cargo bench --bench lineage
//!
//! Each size is measured in a fresh process (this binary run again with `--measure`),
//! so the peak memory read from `/proc/self/status` (VmHWM) belongs to that load alone.
//! Aims on the 2-core dev machine: hubspot loaded in under 50 ms; 100k nodes loaded in
//! under 3 s and under 1 GiB; blast radius of any node under 10 ms at p99.

#[path = "support/scale_manifest.rs"]
mod scale_manifest;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dataward::lineage::Lineage;

const HUBSPOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/fixtures/dbt/hubspot-manifest.json"
);
const SIZES: &[usize] = &[10_000, 100_000];
/// Blast radii timed per size: every node up to this many, else an even spread.
const SAMPLE: usize = 3_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--measure") {
        measure(Path::new(&args[at + 1]));
        return;
    }
    let hubspot = Path::new(HUBSPOT);
    if !hubspot.is_file() {
        println!("skipping: {} is missing", hubspot.display());
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lineage-bench");
    std::fs::create_dir_all(&dir).unwrap();

    let mut files = vec![("hubspot".to_string(), hubspot.to_path_buf())];
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(hubspot).unwrap()).unwrap();
    for &size in SIZES {
        let started = Instant::now();
        let scaled = scale_manifest::scale(&base, size);
        let path = dir.join(format!("manifest-{size}.json"));
        let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        serde_json::to_writer(file, &scaled).unwrap();
        println!(
            "generated {} ({:.0} MB) in {:.1} s",
            path.display(),
            std::fs::metadata(&path).unwrap().len() as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
        files.push((format!("{}k", size / 1000), path));
    }

    println!();
    println!(
        "{:<8} {:>8} {:>8} {:>10} {:>10} {:>12} {:>12} {:>12} {:>14}",
        "manifest",
        "MB",
        "nodes",
        "load ms",
        "peak MiB",
        "blast p50 us",
        "blast p99 us",
        "blast max us",
        "downstream p50/max"
    );
    let me = std::env::current_exe().unwrap();
    for (label, path) in files {
        let output = Command::new(&me)
            .arg("--measure")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{label}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let line = String::from_utf8_lossy(&output.stdout);
        let size = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
        println!("{label:<8} {size:>8.1} {}", line.trim_end());
    }
}

/// Load one manifest, then time blast radii; prints one row of the table.
fn measure(path: &Path) {
    let started = Instant::now();
    let lineage = Lineage::load(path, None).unwrap();
    let load = started.elapsed();
    let peak_kib = status_kib("VmHWM:");

    let nodes: Vec<_> = lineage.graph().node_indices().collect();
    let step = nodes.len().div_ceil(SAMPLE).max(1);
    let mut times = Vec::new();
    let mut sizes = Vec::new();
    for &index in nodes.iter().step_by(step) {
        let started = Instant::now();
        let blast = lineage.blast_radius(index, None);
        times.push(started.elapsed());
        sizes.push(blast.nodes.len());
        std::hint::black_box(blast);
    }
    times.sort();
    sizes.sort();
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{:>8} {:>10.1} {:>10.1} {:>12.1} {:>12.1} {:>12.1} {:>9}/{}",
        lineage.len(),
        load.as_secs_f64() * 1e3,
        peak_kib as f64 / 1024.0,
        micros(at(0.5)),
        micros(at(0.99)),
        micros(*times.last().unwrap()),
        sizes[sizes.len() / 2],
        sizes.last().unwrap()
    );
}

/// A `kB` figure from `/proc/self/status`, e.g. `VmHWM:` (peak resident set).
fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}
