//! Standalone test cluster: `tfjob-testcluster --kubeconfig PATH [--scenario FILE] [--port N]`.

use std::path::PathBuf;

use tfjob_testcluster::{Scenario, TestCluster};

fn usage() -> ! {
    eprintln!("usage: tfjob-testcluster --kubeconfig PATH [--scenario FILE.yaml|json] [--port N]");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut kubeconfig, mut scenario, mut port) = (None, None, 0u16);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--kubeconfig" => kubeconfig = args.next().map(PathBuf::from),
            "--scenario" => scenario = args.next(),
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    let Some(kubeconfig) = kubeconfig else {
        usage()
    };
    let scenario = match scenario {
        Some(path) => {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                eprintln!("cannot read {path}: {e}");
                std::process::exit(2)
            });
            // Big generated scenarios (bench/run.sh: 150,000 pods) load much faster as JSON.
            let parsed = if path.ends_with(".json") {
                Scenario::from_json(&text)
            } else {
                Scenario::from_yaml(&text)
            };
            parsed.unwrap_or_else(|e| {
                eprintln!("invalid scenario {path}: {e}");
                std::process::exit(2)
            })
        }
        None => Scenario::default(),
    };
    let cluster = TestCluster::start_async_on(scenario, port, Some(kubeconfig.clone())).await;
    println!("{}", cluster.url());
    eprintln!(
        "tfjob-testcluster serving at {} (kubeconfig {}); Ctrl-C to stop",
        cluster.url(),
        kubeconfig.display()
    );
    let _ = tokio::signal::ctrl_c().await;
}
