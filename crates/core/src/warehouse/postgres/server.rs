//! Which PostgreSQL servers the checks run on.

/// The oldest server the scan runs on (`date_bin` came in PostgreSQL 14).
const OLDEST_SERVER: u32 = 140_000;

/// Why a server answering `server_version_num` cannot be watched, if it cannot. A
/// server that answers something else is not refused here: its queries will say.
pub(super) fn too_old(server_version_num: &str) -> Option<String> {
    let number: u32 = server_version_num.trim().parse().ok()?;
    (number < OLDEST_SERVER).then(|| {
        format!(
            "the server is PostgreSQL {} (server_version_num {number}); dataward's checks \
             need PostgreSQL 14 or later (their scan bins times with date_bin): upgrade the \
             server, or watch a replica that runs 14 or later",
            major(number)
        )
    })
}

/// 13 for 130004, 9.6 for 90624: before 10, a major version had two parts.
pub(crate) fn major(number: u32) -> String {
    if number >= 100_000 {
        (number / 10_000).to_string()
    } else {
        format!("{}.{}", number / 10_000, number / 100 % 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_before_14_are_refused_naming_their_version() {
        let refused = too_old("130004").unwrap();
        assert!(refused.contains("PostgreSQL 13 "), "{refused}");
        assert!(refused.contains("14 or later"), "{refused}");
        assert!(too_old("90624").unwrap().contains("PostgreSQL 9.6 "));
        assert_eq!(too_old("140000"), None);
        assert_eq!(too_old("150010"), None);
        assert_eq!(too_old("not a number"), None);
    }
}
