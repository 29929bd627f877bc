//! Redirect-target validation: never panics, and what it accepts is safe — no control
//! characters or backslashes, never protocol-relative, on a trusted origin — and normalizing
//! again changes nothing.
#![no_main]
use gatehouse_api::http::TrustedOrigins;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(target) = std::str::from_utf8(data) else {
        return;
    };
    let origins = TrustedOrigins::new(
        "http://localhost:3000",
        &[
            "https://app.example.com".into(),
            "https://*.trusted.dev".into(),
        ],
    );
    let Some(normal) = origins.normalize_redirect(target) else {
        return;
    };
    assert!(
        !normal.chars().any(|c| c.is_control() || c == '\\'),
        "{normal:?}"
    );
    if normal.starts_with('/') {
        assert!(!normal.starts_with("//"), "{normal:?}");
    } else {
        assert!(origins.is_trusted_url(&normal), "{normal:?}");
    }
    assert_eq!(
        origins.normalize_redirect(&normal).as_deref(),
        Some(normal.as_str())
    );
});
