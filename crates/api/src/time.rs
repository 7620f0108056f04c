//! The one time type dataward stores and sends: a UTC instant to the second, written as
//! RFC 3339 (`2026-03-01T09:00:00Z`). It is the text every chain record, receipt, state
//! database row and message carried before there was a type, so none of them changes.
//! Part of the protocol (serde and chrono only); the rest of dataward names it as
//! `crate::clock::Timestamp`.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta, Timelike, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a [`Timestamp`] is written: RFC 3339 in UTC, to the second.
pub const FORMAT: &str = "%Y-%m-%dT%H:%M:%SZ";

/// A UTC instant to the whole second. Ordered, hashable and `Copy`; parsed only from
/// [`FORMAT`], so two equal times are always the same text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(NaiveDateTime);

/// A text that is not a time as dataward writes it; names the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadTimestamp {
    pub text: String,
}

impl fmt::Display for BadTimestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a time as dataward writes it (UTC, like 2026-03-01T09:00:00Z)",
            self.text
        )
    }
}

impl std::error::Error for BadTimestamp {}

impl Timestamp {
    /// `at` (UTC), its fraction of a second dropped: what it reads as once written.
    pub fn from_naive(at: NaiveDateTime) -> Timestamp {
        Timestamp(at.with_nanosecond(0).unwrap_or(at))
    }

    pub fn from_utc(at: DateTime<Utc>) -> Timestamp {
        Timestamp::from_naive(at.naive_utc())
    }

    /// Seconds since the Unix epoch; None past chrono's range.
    pub fn from_unix(seconds: i64) -> Option<Timestamp> {
        DateTime::from_timestamp(seconds, 0).map(Timestamp::from_utc)
    }

    /// Milliseconds since the Unix epoch (the outbox's unit), to the second below.
    pub fn from_unix_millis(millis: i64) -> Option<Timestamp> {
        DateTime::from_timestamp_millis(millis).map(Timestamp::from_utc)
    }

    /// Reads [`FORMAT`] and nothing else, written as it writes it (every field at its
    /// full width), so the time reads back to the very text it came from: a chain
    /// record's hash covers that text.
    pub fn parse(text: &str) -> Result<Timestamp, BadTimestamp> {
        NaiveDateTime::parse_from_str(text, FORMAT)
            .ok()
            .map(Timestamp)
            .filter(|at| at.to_string() == text)
            .ok_or_else(|| BadTimestamp {
                text: text.to_string(),
            })
    }

    /// Any RFC 3339 time, as other systems write theirs (an orchestrator's run times):
    /// any offset, any fraction of a second, `T` or a space between date and time
    /// (dbt Cloud's `2026-11-24 14:58:40.000000+00:00`). Read as the instant it names,
    /// in UTC, its fraction dropped; compared as text, these forms sort wrongly.
    pub fn from_rfc3339(text: &str) -> Result<Timestamp, BadTimestamp> {
        let trimmed = text.trim();
        DateTime::parse_from_rfc3339(trimmed)
            .or_else(|_| DateTime::parse_from_str(trimmed, "%Y-%m-%d %H:%M:%S%.f%:z"))
            .map(|at| Timestamp::from_utc(at.with_timezone(&Utc)))
            .map_err(|_| BadTimestamp {
                text: text.to_string(),
            })
    }

    /// `HH:MM`, as a time is shown beside today's figures.
    pub fn hour_minute(self) -> String {
        self.0.format("%H:%M").to_string()
    }

    pub fn naive(self) -> NaiveDateTime {
        self.0
    }

    pub fn utc(self) -> DateTime<Utc> {
        self.0.and_utc()
    }

    pub fn unix(self) -> i64 {
        self.utc().timestamp()
    }

    pub fn unix_millis(self) -> i64 {
        self.utc().timestamp_millis()
    }
}

/// The Unix epoch: what an empty [`crate::Snapshot`] reads as before an engine fills it.
impl Default for Timestamp {
    fn default() -> Timestamp {
        Timestamp(DateTime::UNIX_EPOCH.naive_utc())
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format(FORMAT))
    }
}

impl FromStr for Timestamp {
    type Err = BadTimestamp;

    fn from_str(text: &str) -> Result<Timestamp, BadTimestamp> {
        Timestamp::parse(text)
    }
}

impl From<NaiveDateTime> for Timestamp {
    fn from(at: NaiveDateTime) -> Timestamp {
        Timestamp::from_naive(at)
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(at: DateTime<Utc>) -> Timestamp {
        Timestamp::from_utc(at)
    }
}

impl std::ops::Add<TimeDelta> for Timestamp {
    type Output = Timestamp;

    fn add(self, by: TimeDelta) -> Timestamp {
        Timestamp::from_naive(self.0 + by)
    }
}

impl std::ops::Sub<TimeDelta> for Timestamp {
    type Output = Timestamp;

    fn sub(self, by: TimeDelta) -> Timestamp {
        Timestamp::from_naive(self.0 - by)
    }
}

impl std::ops::Sub for Timestamp {
    type Output = TimeDelta;

    fn sub(self, earlier: Timestamp) -> TimeDelta {
        self.0 - earlier.0
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Timestamp, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Where a new level starts: a day of the table's data (volume judges days) or the
/// time of a poll (row count and null rate judge polls). Sent as the text it was before
/// it had a type, `2026-10-14` or `2026-10-14T06:00:00Z`, so either reads back as what
/// it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Since {
    Day(NaiveDate),
    Time(Timestamp),
}

impl fmt::Display for Since {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Since::Day(day) => write!(f, "{}", day.format("%Y-%m-%d")),
            Since::Time(at) => write!(f, "{at}"),
        }
    }
}

impl FromStr for Since {
    type Err = String;

    fn from_str(text: &str) -> Result<Since, String> {
        if let Ok(at) = Timestamp::parse(text) {
            return Ok(Since::Time(at));
        }
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .filter(|day| day.format("%Y-%m-%d").to_string() == text)
            .map(Since::Day)
            .ok_or_else(|| {
                format!("{text:?} is neither a day (2026-03-01) nor a time (2026-03-01T09:00:00Z)")
            })
    }
}

impl Serialize for Since {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Since {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Since, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    /// The wire, the chain's payloads and the state database hold the text a time was
    /// before it had a type: the type writes that text, and reads it back to itself.
    #[test]
    fn travels_as_the_text_it_was() {
        let text = "2026-03-01T09:05:07Z";
        let time = at(text);
        assert_eq!(time.to_string(), text);
        assert_eq!(serde_json::to_value(time).unwrap(), json!(text));
        let read: Timestamp = serde_json::from_value(json!(text)).unwrap();
        assert_eq!(read, time);
        let some: Option<Timestamp> = serde_json::from_value(json!(text)).unwrap();
        assert_eq!(some, Some(time));
        let none: Option<Timestamp> = serde_json::from_value(json!(null)).unwrap();
        assert_eq!(none, None);
        // What the old `clock::timestamp` wrote for any instant, this writes too.
        let naive =
            NaiveDateTime::parse_from_str("2026-03-01 09:05:07.999", "%Y-%m-%d %H:%M:%S%.f")
                .unwrap();
        assert_eq!(
            Timestamp::from_naive(naive).to_string(),
            naive.format(FORMAT).to_string()
        );
        assert_eq!(Timestamp::from_naive(naive), time);
    }

    /// A bad time is refused with the text that was read, never taken as some default.
    #[test]
    fn a_bad_time_is_refused_naming_its_text() {
        for bad in [
            "",
            "yesterday",
            "2026-03-01 09:05:07",
            "2026-03-01T09:05:07+01:00",
            "2026-03-01T09:05:07.5Z",
            "2026-02-30T09:05:07Z",
            "2026-3-1T9:5:7Z",
            " 2026-03-01T09:05:07Z",
        ] {
            let error = Timestamp::parse(bad).unwrap_err();
            assert_eq!(error.text, bad);
            assert!(error.to_string().contains(&format!("{bad:?}")), "{error}");
            let wire = serde_json::from_value::<Timestamp>(json!(bad)).unwrap_err();
            assert!(wire.to_string().contains(&format!("{bad:?}")), "{wire}");
        }
        assert!(serde_json::from_value::<Timestamp>(json!(20260301)).is_err());
    }

    /// Other systems' RFC 3339 is read as the instant it names; as text, each of these
    /// would sort before 09:00:00Z, the instant they all follow.
    #[test]
    fn reads_any_rfc_3339_as_the_instant_it_names() {
        let opened = at("2026-03-01T09:00:00Z");
        for (theirs, ours) in [
            ("2026-03-01 09:00:05.123456+00:00", "2026-03-01T09:00:05Z"),
            ("2026-03-01T09:00:00.5+00:00", "2026-03-01T09:00:00Z"),
            ("2026-03-01T08:30:00-01:00", "2026-03-01T09:30:00Z"),
            ("2026-03-01T09:00:01.000001Z", "2026-03-01T09:00:01Z"),
            ("2026-03-01T09:00:00Z", "2026-03-01T09:00:00Z"),
        ] {
            let read = Timestamp::from_rfc3339(theirs).unwrap();
            assert_eq!(read, at(ours), "{theirs}");
            assert!(read >= opened, "{theirs}");
        }
        for bad in ["", "yesterday", "2026-03-01", "2026-03-01T09:00:00"] {
            assert_eq!(Timestamp::from_rfc3339(bad).unwrap_err().text, bad);
        }
    }

    /// A new level's start reads back as the day or the time it was sent as.
    #[test]
    fn a_since_is_a_day_or_a_time_and_travels_as_its_text() {
        let day = Since::Day(NaiveDate::from_ymd_opt(2026, 10, 14).unwrap());
        let time = Since::Time(at("2026-10-14T06:00:00Z"));
        for (since, text) in [(day, "2026-10-14"), (time, "2026-10-14T06:00:00Z")] {
            assert_eq!(since.to_string(), text);
            assert_eq!(serde_json::to_value(since).unwrap(), json!(text));
            assert_eq!(serde_json::from_value::<Since>(json!(text)).unwrap(), since);
        }
        for bad in ["", "t", "2026-10-4", "2026-10-14 06:00:00"] {
            let error = serde_json::from_value::<Since>(json!(bad)).unwrap_err();
            assert!(error.to_string().contains(&format!("{bad:?}")), "{error}");
        }
    }

    /// Ordered as time is, which the text also is (fixed width, most significant first).
    #[test]
    fn orders_and_counts_as_time() {
        let (early, late) = (at("2026-03-01T09:59:59Z"), at("2026-03-01T10:00:00Z"));
        assert!(early < late);
        assert!(early.to_string() < late.to_string());
        assert_eq!(late - early, TimeDelta::seconds(1));
        assert_eq!(early + TimeDelta::seconds(1), late);
        assert_eq!(late - TimeDelta::hours(1), at("2026-03-01T09:00:00Z"));
        assert_eq!(Timestamp::from_unix(late.unix()), Some(late));
        assert_eq!(
            Timestamp::from_unix_millis(late.unix_millis() + 999),
            Some(late)
        );
    }
}
