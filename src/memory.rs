//! The allocator's one setting: the daemon allocates from a single glibc arena.
//!
//! glibc's malloc gives threads that allocate at the same time arenas of their own (up to eight
//! per core), and each arena keeps the pages that its freed chunks leave between live ones. A
//! request is allocated on one worker thread and freed on another, so with the two tokio
//! workers of a 2-core machine the daemon's resident memory crept up with every burst of
//! questions: the benchmark's 100 rounds of 1,000 answered questions ended 6 to 13% above
//! round 10, with about 3 MiB live. With one arena the rounds stay within 4% (see
//! docs/performance.md). `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` in the environment win over it.

/// Limits glibc's malloc to one arena, unless the environment already chose; a no-op with
/// other allocators. Call it before the runtime starts its threads.
pub fn use_one_arena() {
    let chosen = std::env::var_os("MALLOC_ARENA_MAX").is_some()
        || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"));
    if !chosen {
        set_arena_max(1);
    }
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
