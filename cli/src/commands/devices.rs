//! `megagraph devices`: the wgpu adapters of this machine.

use clap::Args;
use megagraph_engine::device::{list_adapters, list_adapters_of, parse_backends};

/// Options of `megagraph devices`.
#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// The graphics APIs to list adapters of: `all`, or a comma-separated list of vulkan, gl,
    /// metal and dx12 (default: Vulkan, Metal and DX12, or any API where those find none).
    #[arg(long, value_name = "APIS")]
    backends: Option<String>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Lists the adapters.
pub fn run(args: &DevicesArgs) -> anyhow::Result<()> {
    let adapters = match &args.backends {
        Some(text) => list_adapters_of(parse_backends(text).map_err(anyhow::Error::msg)?),
        None => list_adapters(),
    };
    if args.json {
        println!("{}", serde_json::json!({ "adapters": adapters }));
        return Ok(());
    }
    if adapters.is_empty() {
        println!("no wgpu adapter found (install a Vulkan driver, e.g. mesa-vulkan-drivers)");
    }
    for a in &adapters {
        println!(
            "{:>2}  {:<40} {:<7} {:<14} max binding {} MiB, workgroup {} KiB / {} invocations, subgroups {}-{}  {}",
            a.index,
            a.name,
            a.backend,
            a.device_type,
            a.max_storage_buffer_binding_size >> 20,
            a.max_compute_workgroup_storage_size >> 10,
            a.max_compute_invocations_per_workgroup,
            a.subgroup_sizes[0],
            a.subgroup_sizes[1],
            a.driver
        );
    }
    Ok(())
}
