//! The session cookie path: any `Cookie` header → the cookie's value → its signature check.
//! Never panics; a value that verifies is exactly what signing its token produces (no second
//! encoding of one signature is accepted).
#![no_main]
use gatehouse_api::crypto::Signer;
use gatehouse_api::http::request_cookie;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let signer = Signer::new("fuzz-secret-0123456789abcdefghijklmnop");
    let Ok(header) = poem::http::HeaderValue::from_bytes(data) else {
        return;
    };
    let req = poem::Request::builder()
        .header(poem::http::header::COOKIE, header)
        .finish();
    if let Some(raw) = request_cookie(&req, "gatehouse.session_token") {
        if let Some(token) = signer.unsign(&raw) {
            assert_eq!(signer.sign(token), raw);
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Some(token) = signer.unsign(text) {
            assert_eq!(signer.sign(token), text);
        }
        // Whatever is signed verifies.
        assert_eq!(signer.unsign(&signer.sign(text)), Some(text));
    }
});
