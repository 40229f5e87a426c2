//! The allocator's one setting: the daemon allocates from a single glibc arena.
//!
//! glibc's malloc gives threads that allocate at the same time arenas of their own (up to eight
//! per core), and each arena keeps the pages that its freed chunks leave between live ones. A
//! request is allocated on one worker thread and freed on another, so with the two tokio
//! workers of a 2-core machine the daemon's resident memory crept up with every burst of
//! questions: the benchmark's 100 rounds of 1,000 answered questions ended 5 to 13% above
//! round 10, with about 3 MiB live between rounds. With one arena they ended within 2.5% of it
//! in four runs, for about a fifth less throughput when 10,000 answers arrive at once (see
//! docs/performance.md). `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` in the environment win.

/// Limits glibc's malloc to one arena, unless the environment already chose; a no-op with
/// other allocators. Call it before the runtime starts its threads.
pub fn use_one_arena() {
    let tunables = std::env::var("GLIBC_TUNABLES").ok();
    if !chosen(
        std::env::var_os("MALLOC_ARENA_MAX").is_some(),
        tunables.as_deref(),
    ) {
        set_arena_max(1);
    }
}

/// Whether the environment set the number of arenas already.
fn chosen(malloc_arena_max: bool, glibc_tunables: Option<&str>) -> bool {
    malloc_arena_max
        || glibc_tunables.is_some_and(|t| {
            t.split(':')
                .any(|kv| kv.split('=').next() == Some("glibc.malloc.arena_max"))
        })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn set_arena_max(arenas: i32) {
    /// `M_ARENA_MAX` in glibc's malloc.h.
    const M_ARENA_MAX: std::os::raw::c_int = -8;
    extern "C" {
        fn mallopt(param: std::os::raw::c_int, value: std::os::raw::c_int) -> std::os::raw::c_int;
    }
    // SAFETY: mallopt takes two integers and no pointers; glibc documents M_ARENA_MAX as
    // settable at any time (it bounds the arenas created from then on).
    unsafe {
        mallopt(M_ARENA_MAX, arenas);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max(_arenas: i32) {}

#[cfg(test)]
mod tests {
    use super::chosen;

    #[test]
    fn the_environment_wins() {
        assert!(!chosen(false, None));
        assert!(chosen(true, None));
        assert!(chosen(
            false,
            Some("glibc.malloc.trim_threshold=131072:glibc.malloc.arena_max=4")
        ));
        assert!(!chosen(false, Some("glibc.malloc.trim_threshold=131072")));
    }
}
