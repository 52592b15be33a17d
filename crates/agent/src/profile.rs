//! The business profile: who the agent answers for. Configuration, not code;
//! the default is the HVAC company of SPEC.md (ACE Cooling, Austin TX).
//!
//! The binary reads it from TOML plus environment overrides and calls
//! [`BusinessProfile::validate`], which lists every problem at once.

use chrono::Weekday;
use serde::{Deserialize, Serialize};

/// The company the agent answers for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BusinessProfile {
    /// Company name used in the greeting and prompts.
    pub company_name: String,
    /// City / region, used in the persona ("an HVAC company in Austin, TX").
    pub city: String,
    /// Trade, used in the persona and the dashboard `service_type`.
    pub trade: String,
    /// ZIP prefixes that are inside the service area (e.g. `["787"]`).
    pub service_area_zip_prefixes: Vec<String>,
    /// IANA time zone name, e.g. `America/Chicago`.
    pub timezone: String,
    /// First bookable hour (local, 0–23).
    pub open_hour: u32,
    /// Closing hour (local, 1–24): no visit starts at or after it.
    pub close_hour: u32,
    /// Days with business hours, lower-case English names or 3-letter
    /// abbreviations (`mon` … `sun`).
    pub business_days: Vec<String>,
    /// Diagnostic visit price in whole dollars (credited toward the repair).
    pub diagnostic_price: u32,
    /// The first line of every call. `{company}` is replaced by the name.
    pub greeting: String,
}

impl Default for BusinessProfile {
    fn default() -> Self {
        BusinessProfile {
            company_name: "ACE Cooling".into(),
            city: "Austin, Texas".into(),
            trade: "HVAC".into(),
            service_area_zip_prefixes: vec!["787".into()],
            timezone: "America/Chicago".into(),
            open_hour: 9,
            close_hour: 18,
            business_days: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
                .iter()
                .map(|d| d.to_string())
                .collect(),
            diagnostic_price: 89,
            greeting: "Thanks for calling {company}! How can I help you today?".into(),
        }
    }
}

/// Every problem found in a profile, reported together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid business profile:\n  - {}", .0.join("\n  - "))]
pub struct ProfileErrors(pub Vec<String>);

/// Parse a day name (`monday`, `Mon`, `tue`, …).
pub fn parse_weekday(s: &str) -> Option<Weekday> {
    let l = s.trim().to_ascii_lowercase();
    let d = match l.get(..3)? {
        "mon" => Weekday::Mon,
        "tue" => Weekday::Tue,
        "wed" => Weekday::Wed,
        "thu" => Weekday::Thu,
        "fri" => Weekday::Fri,
        "sat" => Weekday::Sat,
        "sun" => Weekday::Sun,
        _ => return None,
    };
    let full = match d {
        Weekday::Mon => "monday",
        Weekday::Tue => "tuesday",
        Weekday::Wed => "wednesday",
        Weekday::Thu => "thursday",
        Weekday::Fri => "friday",
        Weekday::Sat => "saturday",
        Weekday::Sun => "sunday",
    };
    (l.len() == 3 || l == full).then_some(d)
}

impl BusinessProfile {
    /// Check every field; on failure return all problems at once.
    pub fn validate(&self) -> Result<(), ProfileErrors> {
        let mut errs = Vec::new();
        if self.company_name.trim().is_empty() {
            errs.push("company_name must not be empty".to_string());
        }
        if self.service_area_zip_prefixes.is_empty() {
            errs.push("service_area_zip_prefixes must list at least one ZIP prefix".into());
        }
        for p in &self.service_area_zip_prefixes {
            if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
                errs.push(format!(
                    "service_area_zip_prefixes: {p:?} is not a ZIP prefix (1-5 digits)"
                ));
            }
        }
        if self.timezone.parse::<chrono_tz::Tz>().is_err() {
            errs.push(format!(
                "timezone: {:?} is not an IANA time zone (e.g. \"America/Chicago\")",
                self.timezone
            ));
        }
        if self.open_hour > 23 {
            errs.push(format!(
                "open_hour: {} is not an hour (0-23)",
                self.open_hour
            ));
        }
        if self.close_hour == 0 || self.close_hour > 24 {
            errs.push(format!(
                "close_hour: {} is not an hour (1-24)",
                self.close_hour
            ));
        }
        if self.open_hour >= self.close_hour {
            errs.push(format!(
                "open_hour ({}) must be before close_hour ({})",
                self.open_hour, self.close_hour
            ));
        }
        if self.business_days.is_empty() {
            errs.push("business_days must list at least one day".into());
        }
        for d in &self.business_days {
            if parse_weekday(d).is_none() {
                errs.push(format!("business_days: {d:?} is not a day name (mon..sun)"));
            }
        }
        if self.greeting.trim().is_empty() {
            errs.push("greeting must not be empty".into());
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ProfileErrors(errs))
        }
    }

    /// The parsed time zone (falls back to America/Chicago if invalid; call
    /// [`validate`](Self::validate) first).
    pub fn tz(&self) -> chrono_tz::Tz {
        self.timezone.parse().unwrap_or(chrono_tz::America::Chicago)
    }

    /// Whether the business is open on `day`.
    pub fn is_business_day(&self, day: Weekday) -> bool {
        self.business_days
            .iter()
            .any(|d| parse_weekday(d) == Some(day))
    }

    /// Whether a validated 5-digit ZIP is inside the service area.
    pub fn zip_in_area(&self, zip: &str) -> bool {
        self.service_area_zip_prefixes
            .iter()
            .any(|p| zip.starts_with(p.as_str()))
    }

    /// The greeting with `{company}` filled in.
    pub fn greeting_line(&self) -> String {
        self.greeting.replace("{company}", &self.company_name)
    }

    /// Human text for the service area, e.g. "ZIP codes starting with 787".
    pub fn area_description(&self) -> String {
        format!(
            "ZIP codes starting with {}",
            self.service_area_zip_prefixes.join(" or ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_profile_is_valid() {
        BusinessProfile::default().validate().unwrap();
    }

    #[test]
    fn every_problem_is_listed() {
        let p = BusinessProfile {
            company_name: " ".into(),
            timezone: "Mars/Olympus".into(),
            open_hour: 20,
            close_hour: 18,
            business_days: vec!["funday".into()],
            service_area_zip_prefixes: vec!["78a".into()],
            ..BusinessProfile::default()
        };
        let err = p.validate().unwrap_err();
        assert_eq!(err.0.len(), 5, "{err}");
        let text = err.to_string();
        assert!(text.contains("Mars/Olympus"));
        assert!(text.contains("funday"));
        assert!(text.contains("78a"));
    }

    #[test]
    fn weekday_names() {
        assert_eq!(parse_weekday("Monday"), Some(Weekday::Mon));
        assert_eq!(parse_weekday("sun"), Some(Weekday::Sun));
        assert_eq!(parse_weekday("mond"), None);
        assert_eq!(parse_weekday(""), None);
    }
}
