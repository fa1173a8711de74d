//! A panic on a thread that nobody waits for ends the process.

use megagraph_engine::parallel::WORKER_THREAD_PREFIX;

/// Installs a panic hook that, after the usual report, ends the process at once when the
/// panicking thread is neither the main thread nor a device's worker (whose panics become the
/// device's error). The other threads belong to the GPU runtime (cubecl's poll thread, which
/// wgpu's OpenGL backend panics on when its context lock is held past its wait: 6 s
/// upstream, 120 s as `vendor/wgpu-hal` patches it) or to the MPI
/// receiver: nothing joins them, so their panic would leave a device waiting forever for work
/// no thread completes (an MPI job waited out its 900 s warm-up timeout on one).
pub fn end_the_process_on_orphan_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed");
        if name != "main" && !name.starts_with(WORKER_THREAD_PREFIX) {
            crate::error_line::say_error(format_args!(
                "a runtime thread ({name}) panicked and no device can finish without it: the process ends here"
            ));
            std::process::abort();
        }
    }));
}
