//! Who may read the operator's endpoints: a bearer token compared in
//! constant time (`/metrics` with `serve.metrics_token`, `/api/…` with
//! `serve.api_token`).

use axum::http::{header, HeaderMap};

/// Whether `headers` carry `Authorization: Bearer <token>` for this
/// (non-empty) `token`.
pub(crate) fn bearer_ok(headers: &HeaderMap, token: &str) -> bool {
    if token.is_empty() {
        return false;
    }
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    subtle::ConstantTimeEq::ct_eq(given.as_bytes(), token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn only_the_exact_bearer_token_passes() {
        assert!(bearer_ok(&with("Bearer s3cret"), "s3cret"));
        for bad in [
            "Bearer s3cre",
            "Bearer s3cret ",
            "bearer s3cret",
            "s3cret",
            "Basic s3cret",
            "Bearer ",
        ] {
            assert!(!bearer_ok(&with(bad), "s3cret"), "{bad:?}");
        }
        assert!(!bearer_ok(&HeaderMap::new(), "s3cret"));
        // No token configured: nobody passes, not even an empty bearer.
        assert!(!bearer_ok(&with("Bearer "), ""));
    }
}
