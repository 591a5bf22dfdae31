//! What a request says about itself in its headers: the operation it belongs to, whether that
//! is an idempotency key, and the attempt number its client states. Pure functions of the
//! header values, so that the HTTP front only collects them.
//!
//! | header | read as |
//! |---|---|
//! | `Idempotency-Key`, `X-Idempotency-Key` | the operation's id, and its key at the dedup store (IETF draft `httpapi-idempotency-key-header`; Stripe, PayPal) |
//! | `X-Op-Id` | the operation's id only (grouping attempts in the log), no key |
//! | `amz-sdk-request: attempt=N; max=M` | attempt N (the AWS SDKs) |
//! | `grpc-previous-rpc-attempts: K` | attempt K + 1 (gRPC's retry design, A6) |
//! | `X-Attempt: N` | attempt N |

/// The longest operation id accepted (Stripe's limit for idempotency keys is 255 characters).
pub const MAX_ID_LEN: usize = 255;

/// The identity a request states.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// The operation's id, from the key header or `X-Op-Id`.
    pub op_id: Option<String>,
    /// The id came from an idempotency-key header: the dedup store sees it.
    pub keyed: bool,
    /// The attempt number the client states (1 for the first).
    pub attempt: Option<u32>,
}

/// A header whose value cannot be read: answered 400 with this message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadHeader {
    pub header: &'static str,
    pub reason: String,
}

impl std::fmt::Display for BadHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "header {}: {}", self.header, self.reason)
    }
}

/// The identity stated by the headers that `get` returns (by lower-case name; `Err(())` for a
/// value that is not visible ASCII).
pub fn identity<'a>(get: impl Fn(&str) -> Option<Result<&'a str, ()>>) -> Result<Identity, BadHeader> {
    let read = |name: &'static str| -> Result<Option<&'a str>, BadHeader> {
        match get(name) {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v.trim())),
            Some(Err(())) => Err(BadHeader { header: name, reason: "not visible ASCII".into() }),
        }
    };
    let key = match read("idempotency-key")? {
        Some(k) => Some(("idempotency-key", k)),
        None => read("x-idempotency-key")?.map(|k| ("x-idempotency-key", k)),
    };
    let (op, keyed) = match key {
        Some(k) => (Some(k), true),
        None => (read("x-op-id")?.map(|v| ("x-op-id", v)), false),
    };
    let op_id = op.map(|(header, v)| op_id(header, v)).transpose()?;
    let attempt = if let Some(v) = read("amz-sdk-request")? {
        Some(amz_attempt(v)?)
    } else if let Some(v) = read("grpc-previous-rpc-attempts")? {
        let previous = number("grpc-previous-rpc-attempts", v, 0)?;
        Some(previous.checked_add(1).ok_or_else(|| too_large("grpc-previous-rpc-attempts"))?)
    } else {
        read("x-attempt")?.map(|v| number("x-attempt", v, 1)).transpose()?
    };
    Ok(Identity { op_id, keyed, attempt })
}

/// An operation id: 1 to [`MAX_ID_LEN`] characters. A key may be a quoted string (the IETF
/// draft's structured-field form, `Idempotency-Key: "8e03978e"`); the quotes are not part of it.
fn op_id(header: &'static str, v: &str) -> Result<String, BadHeader> {
    let v = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(v);
    if v.is_empty() {
        return Err(BadHeader { header, reason: "empty; send a unique id per operation".into() });
    }
    if v.len() > MAX_ID_LEN {
        return Err(BadHeader { header, reason: format!("longer than {MAX_ID_LEN} characters") });
    }
    Ok(v.to_owned())
}

/// `attempt=N; max=M` (the fields in any order; `max` optional).
fn amz_attempt(v: &str) -> Result<u32, BadHeader> {
    const H: &str = "amz-sdk-request";
    let attempt = v
        .split(';')
        .filter_map(|field| field.trim().split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("attempt"))
        .map(|(_, n)| n.trim())
        .ok_or_else(|| BadHeader { header: H, reason: format!("{v:?} has no attempt=N") })?;
    number(H, attempt, 1)
}

/// A decimal number of at least `min`.
fn number(header: &'static str, v: &str, min: u32) -> Result<u32, BadHeader> {
    match v.parse::<u32>() {
        Ok(n) if n >= min => Ok(n),
        Ok(_) => Err(BadHeader { header, reason: format!("{v} is below {min}") }),
        Err(_) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => Err(too_large(header)),
        Err(_) => Err(BadHeader { header, reason: format!("{v:?} is not a whole number") }),
    }
}

fn too_large(header: &'static str) -> BadHeader {
    BadHeader { header, reason: "too large".into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(headers: &[(&str, &str)]) -> Result<Identity, BadHeader> {
        identity(|name| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| Ok(*v)))
    }

    #[test]
    fn the_key_header_names_the_operation_and_the_client_states_the_attempt() {
        let id = of(&[("idempotency-key", "\"k-1\""), ("x-op-id", "other"), ("x-attempt", "9")]).unwrap();
        assert_eq!(id, Identity { op_id: Some("k-1".into()), keyed: true, attempt: Some(9) });
        let id = of(&[("x-idempotency-key", "k-2"), ("amz-sdk-request", "attempt=3; max=5")]).unwrap();
        assert_eq!(id, Identity { op_id: Some("k-2".into()), keyed: true, attempt: Some(3) });
        let id = of(&[("x-op-id", "op7"), ("grpc-previous-rpc-attempts", "2")]).unwrap();
        assert_eq!(id, Identity { op_id: Some("op7".into()), keyed: false, attempt: Some(3) });
        assert_eq!(of(&[]).unwrap(), Identity::default());
        assert_eq!(of(&[("amz-sdk-request", "max=3;attempt=1")]).unwrap().attempt, Some(1));
    }

    #[test]
    fn unreadable_values_name_their_header() {
        let bad = |h: &[(&str, &str)]| of(h).unwrap_err().header;
        assert_eq!(bad(&[("idempotency-key", "")]), "idempotency-key");
        assert_eq!(bad(&[("x-op-id", &"x".repeat(256))]), "x-op-id");
        assert_eq!(bad(&[("x-attempt", "0")]), "x-attempt");
        assert_eq!(bad(&[("x-attempt", "two")]), "x-attempt");
        assert_eq!(bad(&[("amz-sdk-request", "ttl=1")]), "amz-sdk-request");
        assert_eq!(bad(&[("grpc-previous-rpc-attempts", "4294967295")]), "grpc-previous-rpc-attempts");
        assert_eq!(bad(&[("x-attempt", "99999999999")]), "x-attempt");
        let err = identity(|n| (n == "x-op-id").then_some(Err(()))).unwrap_err();
        assert_eq!(err.header, "x-op-id");
    }
}
