//! Who runs this process, as a launch records it (`agentc_policy::ResolveInputs::owner`): the
//! one fact of the process a library caller hands to `resolve` that agentc reads for it.

use agentc_policy::Owner;

/// The user running this process: its ids, and its login name from `USER` or `LOGNAME`, else
/// from the password database (empty when it has none).
pub fn current() -> Owner {
    // SAFETY: getuid and getgid cannot fail and have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let name = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|name| !name.is_empty())
        .or_else(|| account_name(uid))
        .unwrap_or_default();
    Owner { name, uid, gid }
}

/// The login name of `uid` from the password database, when it has one (a shell without
/// `USER`, such as a container or a cron job).
fn account_name(uid: libc::uid_t) -> Option<String> {
    let mut buffer = vec![0 as libc::c_char; 4096];
    // SAFETY: getpwuid_r writes at most `buffer.len()` bytes into `buffer` and fills `entry`
    // with pointers into it; both outlive every read below, and `result` is null or `&entry`.
    unsafe {
        let mut entry: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let status = libc::getpwuid_r(
            uid,
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut result,
        );
        if status != 0 || result.is_null() || entry.pw_name.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr(entry.pw_name)
            .to_str()
            .ok()
            .map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::account_name;

    #[test]
    fn the_password_database_names_root_and_not_an_unused_uid() {
        assert_eq!(account_name(0).as_deref(), Some("root"));
        assert_eq!(account_name(4_000_000_000), None);
    }
}
