//! `megagraph devices`: the wgpu adapters of this machine.

use clap::Args;
use megagraph_engine::device::list_adapters;

/// Options of `megagraph devices` (which graphics APIs: the global `--backends`).
#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Lists the adapters.
pub fn run(args: &DevicesArgs) -> anyhow::Result<()> {
    let adapters = list_adapters();
    if args.json {
        println!("{}", serde_json::json!({ "adapters": adapters }));
        return Ok(());
    }
    if adapters.is_empty() {
        println!("no wgpu adapter found (install a Vulkan driver, e.g. mesa-vulkan-drivers)");
    }
    for a in &adapters {
        println!(
            "{:>2}  {:<44} {:<14} max binding {} MiB, {} storage buffers, workgroup {} KiB / {} invocations, subgroups {}-{}  {}",
            a.index,
            a.id,
            a.device_type,
            a.max_storage_buffer_binding_size >> 20,
            a.max_storage_buffers_per_shader_stage,
            a.max_compute_workgroup_storage_size >> 10,
            a.max_compute_invocations_per_workgroup,
            a.subgroup_sizes[0],
            a.subgroup_sizes[1],
            a.driver
        );
    }
    Ok(())
}
