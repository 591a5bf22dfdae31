//! AWS shared config file profiles (`~/.aws/config`): `retry_mode` and `max_attempts`
//! (docs/retry-policies.md §1a). The file says nothing else about retries: the backoff, the
//! retryable errors and the retry quota are the SDK's own for the mode, which are the
//! `aws-legacy`, `aws-standard` and `aws-adaptive` presets; an import is that preset's keys
//! with the profile's `max_attempts`, and an export writes a strategy only if it is one of them.

use super::keys::{Keys, dropped_comment, field_error, is_neutral, normalized, unknown_notes};
use super::{Exported, Format, Imported, InteropError};
use ini::{Ini, ParseOption};
use toml::{Table, Value};

const KIND: &str = "aws";

/// Each `retry_mode`, its preset and the preset's keys (without comments: the presets'
/// text in src/experiment/presets.rs is the commented one; tests/it/interop_formats.rs
/// checks that these are the same keys).
const MODES: &[(&str, &str, &str)] = &[
    (
        "legacy",
        "aws-legacy",
        r#"max_attempts = 5
retry_on = [429, 500, 503, 509, "timeout", "connection-error"]
honor_retry_after = false
backoff = { kind = "full-jitter", base = "1s", multiplier = 2.0 }"#,
    ),
    (
        "standard",
        "aws-standard",
        r#"max_attempts = 3
retry_on = [429, 500, 502, 503, 504, "timeout", "connection-error"]
honor_retry_after = false
backoff = { kind = "full-jitter", base = "1s", cap = "20s", multiplier = 2.0 }
budget = { kind = "token-bucket", capacity = 500.0, retry_cost = 5.0, timeout_cost = 10.0, throttling_cost = 5.0, success_refund = 1.0, scope = "client" }"#,
    ),
    (
        "adaptive",
        "aws-adaptive",
        r#"max_attempts = 3
retry_on = [429, 500, 502, 503, 504, "timeout", "connection-error"]
honor_retry_after = false
backoff = { kind = "full-jitter", base = "1s", cap = "20s", multiplier = 2.0 }
budget = { kind = "token-bucket", capacity = 500.0, retry_cost = 5.0, timeout_cost = 10.0, throttling_cost = 5.0, success_refund = 1.0, scope = "client" }
throttle = { kind = "aws-adaptive" }"#,
    ),
];

/// botocore's `retry_mode` when the profile has none (§1b).
const DEFAULT_MODE: &str = "legacy";

/// The keys of a profile that are about something else than retries (read by the SDK, not
/// by retrysim): listed as ignored, not as unknown.
const OTHER_SETTINGS: &[&str] = &[
    "region",
    "output",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "role_arn",
    "source_profile",
    "credential_source",
    "credential_process",
    "external_id",
    "mfa_serial",
    "role_session_name",
    "duration_seconds",
    "web_identity_token_file",
    "sso_session",
    "sso_account_id",
    "sso_role_name",
    "sso_region",
    "sso_start_url",
    "endpoint_url",
    "ca_bundle",
    "cli_pager",
    "parameter_validation",
    "s3",
    "services",
    "use_fips_endpoint",
    "use_dualstack_endpoint",
    "defaults_mode",
];

pub struct AwsConfig;

impl Format for AwsConfig {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn extension(&self) -> &'static str {
        "aws.config"
    }

    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError> {
        let opt = ParseOption {
            enabled_escape: false,
            enabled_indented_mutiline_value: true,
            ..ParseOption::default()
        };
        let ini = Ini::load_from_str_opt(text, opt)
            .map_err(|e| InteropError::Parse { kind: KIND, message: e.to_string() })?;
        let profiles: Vec<(String, &ini::Properties)> = ini
            .iter()
            .filter_map(|(section, props)| {
                let section = section?;
                let profile =
                    if section == "default" { Some("default") } else { section.strip_prefix("profile ") };
                profile.map(|p| (p.trim().to_string(), props))
            })
            .collect();
        let (profile, props) = match profiles.iter().find(|(p, _)| p == name) {
            Some(found) => found,
            None if profiles.len() == 1 => &profiles[0],
            None => {
                let names: Vec<&str> = profiles.iter().map(|(p, _)| p.as_str()).collect();
                return Err(field_error(
                    KIND,
                    "profile",
                    if names.is_empty() {
                        "the file has no [profile NAME] or [default] section".to_string()
                    } else {
                        format!(
                            "the file has {} profiles ({}) and none is called {name:?}",
                            names.len(),
                            names.join(", ")
                        )
                    },
                    "pass --name with the profile to read",
                ));
            }
        };
        let mut notes = Vec::new();
        let keys: Vec<&str> = props.iter().map(|(k, _)| k).collect();
        let mut known: Vec<&str> = vec!["retry_mode", "max_attempts"];
        let ignored: Vec<&str> = keys.iter().copied().filter(|k| OTHER_SETTINGS.contains(k)).collect();
        if !ignored.is_empty() {
            notes.push(format!("[profile {profile}]: {} not about retries, not read", ignored.join(", ")));
        }
        known.extend(OTHER_SETTINGS);
        notes.extend(unknown_notes(&format!("profile {profile}."), keys.iter().copied(), &known));
        let mode = match props.get("retry_mode") {
            Some(m) => m.trim(),
            None => {
                notes.push(format!("retry_mode absent: {DEFAULT_MODE}, botocore's default (§1b)"));
                DEFAULT_MODE
            }
        };
        let (_, preset, keys_text) = MODES.iter().find(|(m, _, _)| *m == mode).ok_or_else(|| {
            field_error(
                KIND,
                "retry_mode",
                format!("{mode:?} is not a retry mode"),
                "use legacy, standard or adaptive",
            )
        })?;
        let mut strategy: Table = keys_text.parse().expect("the modes' keys parse");
        notes.push(format!(
            "retry_mode = {mode}: the backoff, retryable errors{} are the {preset} preset's (§1b)",
            if mode == "legacy" { "" } else { " and retry quota" }
        ));
        if mode != "legacy" {
            notes.push(
                "standard is retry behaviour v2.0; with AWS_NEW_RETRIES_2026=true it is the aws-standard-2026 \
                 preset (§1a), which the config file cannot say"
                    .into(),
            );
        }
        match props.get("max_attempts") {
            Some(m) => {
                let n: i64 = m.trim().parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    field_error(
                        KIND,
                        "max_attempts",
                        format!("{m:?} is not an integer >= 1"),
                        "write the attempts in total, the first included, e.g. 3",
                    )
                })?;
                strategy.insert("max_attempts".into(), Value::Integer(n));
            }
            None => notes.push(format!(
                "max_attempts absent: {} for {mode} mode (§1a, §1b)",
                strategy["max_attempts"].as_integer().unwrap_or(0)
            )),
        }
        let mut named = Table::new();
        named.insert("name".into(), Value::String(name.into()));
        named.extend(strategy);
        Ok(Imported { strategy: named, server: Table::new(), notes })
    }

    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError> {
        let mut k = Keys::new(KIND, strategy, lossy);
        let name = k.name();
        let attempts = match k.take("max_attempts") {
            Some(v) => Some(k.count("max_attempts", v)?),
            None => {
                k.refuse("max_attempts", "unlimited attempts: the SDKs need a number")?;
                None
            }
        };
        // The mode whose preset differs from the strategy in the fewest keys.
        let own = normalized(strategy);
        let differing = |keys_text: &str| -> Vec<String> {
            let mode = normalized(&keys_text.parse::<Table>().expect("the modes' keys parse"));
            let mut keys: Vec<String> = mode
                .keys()
                .chain(own.keys())
                .filter(|k| !matches!(k.as_str(), "name" | "preset" | "max_attempts"))
                .cloned()
                .collect();
            keys.sort();
            keys.dedup();
            let neutral = |t: &Table, key: &str| t.get(key).is_none_or(|v| is_neutral(t, key, v));
            keys.retain(|key| own.get(key) != mode.get(key) && !(neutral(&own, key) && neutral(&mode, key)));
            keys
        };
        let (mode, preset, diff) = MODES
            .iter()
            .map(|(m, p, t)| (*m, *p, differing(t)))
            .min_by_key(|(_, _, d)| d.len())
            .expect("three modes");
        for key in &diff {
            k.refuse(key, format!("the config file sets only retry_mode and max_attempts; this is not the {preset} preset's value"))?;
        }
        for key in strategy.keys() {
            k.take(key);
        }
        let dropped = k.finish("")?;
        let mut ini = Ini::new();
        let section = if name == "default" { "default".to_string() } else { format!("profile {name}") };
        let mut s = ini.with_section(Some(section));
        s.set("retry_mode", mode);
        if let Some(n) = attempts {
            s.set("max_attempts", n.to_string());
        }
        let mut body = Vec::new();
        ini.write_to(&mut body).expect("writing to memory");
        let text = format!(
            "# retrysim export: the AWS shared config file sets only the retry mode and the attempt count;\n\
             # the backoff, retryable errors and retry quota are the SDK's own for retry_mode = {mode}\n\
             # (retrysim's {preset} preset, docs/retry-policies.md section 1).\n{}{}",
            dropped_comment("#", &dropped),
            String::from_utf8(body).expect("ini writes UTF-8")
        );
        Ok(Exported { text, dropped })
    }
}

#[cfg(test)]
mod tests {
    use super::super::keys::testing::*;
    use super::*;

    /// The AWS SDKs and Tools reference guide's example of the two settings.
    const GUIDE_EXAMPLE: &str =
        "[default]\nregion = us-west-2\n\n[profile dev]\nretry_mode = standard\nmax_attempts = 5\n";

    #[test]
    fn a_profile_is_its_modes_preset_with_its_attempts() {
        let imp = AwsConfig.import(GUIDE_EXAMPLE, "dev").unwrap();
        let mut want: Table = MODES[1].2.parse().unwrap();
        want.insert("max_attempts".into(), Value::Integer(5));
        want.insert("name".into(), "dev".into());
        assert_eq!(imp.strategy, want);
        assert!(imp.notes.iter().any(|n| n.contains("aws-standard preset")), "{:?}", imp.notes);
    }

    #[test]
    fn absent_settings_are_botocores_defaults_with_a_note() {
        let imp = AwsConfig.import("[default]\nregion = eu-west-1\ncolor = blue\n", "default").unwrap();
        let mut want: Table = MODES[0].2.parse().unwrap();
        want.insert("name".into(), "default".into());
        assert_eq!(imp.strategy, want);
        assert!(imp.notes.iter().any(|n| n.contains("retry_mode absent: legacy")), "{:?}", imp.notes);
        assert!(imp.notes.iter().any(|n| n.contains("max_attempts absent: 5")), "{:?}", imp.notes);
        assert!(imp.notes.iter().any(|n| n.contains("region") && n.contains("not read")), "{:?}", imp.notes);
        assert!(
            imp.notes.iter().any(|n| n.contains("unknown field `profile default.color`")),
            "{:?}",
            imp.notes
        );
    }

    #[test]
    fn the_three_modes_round_trip_with_any_attempt_count() {
        let bodies: Vec<String> = MODES
            .iter()
            .flat_map(|(_, _, t)| {
                [1, 3, 7].map(|n| t.replace(t.lines().next().unwrap(), &format!("max_attempts = {n}")))
            })
            .collect();
        assert_round_trips(&AwsConfig, &bodies.iter().map(String::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn anything_else_is_refused_naming_the_key() {
        let standard = MODES[1].2;
        assert_refused(&AwsConfig, &standard.replace("cap = \"20s\"", "cap = \"10s\""), "backoff");
        assert_refused(&AwsConfig, &format!("{standard}\ntimeout = \"2s\""), "timeout");
        assert_refused(&AwsConfig, &standard.replace("max_attempts = 3\n", ""), "max_attempts");
        let exported = AwsConfig.export(&strategy(&format!("{standard}\ndeadline = \"9s\"")), true).unwrap();
        assert!(exported.text.contains("retry_mode = standard"), "{}", exported.text);
        assert!(exported.text.contains("sets only the retry mode and the attempt count"));
    }

    #[test]
    fn malformed_files_and_values_name_the_field() {
        assert_import_error(&AwsConfig, "[profile x\nretry_mode = standard", "");
        assert_import_error(&AwsConfig, "[profile x]\nretry_mode = fast\n", "retry_mode");
        assert_import_error(&AwsConfig, "[profile x]\nmax_attempts = 0\n", "max_attempts");
        assert_import_error(&AwsConfig, "[profile x]\nmax_attempts = three\n", "max_attempts");
        assert_import_error(&AwsConfig, "[profile a]\n[profile b]\n", "profile");
    }
}
