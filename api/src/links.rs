//! Links the server hands out (in mail, in redirects): absolute URLs on the base URL.

/// Builds links on the base URL. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Links {
    base: std::sync::Arc<str>,
}

impl Links {
    pub fn new(base_url: &str) -> Self {
        Self {
            base: base_url.trim_end_matches('/').into(),
        }
    }

    /// The base URL, without a trailing `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// An absolute URL for a redirect target (relative paths resolve against the base URL).
    pub fn absolute(&self, target: &str) -> String {
        if target.starts_with('/') {
            format!("{}{target}", self.base)
        } else {
            target.to_owned()
        }
    }

    /// `target` (made absolute) with `key=value` added to its query.
    pub fn with_query(&self, target: &str, key: &str, value: &str) -> String {
        let sep = if target.contains('?') { '&' } else { '?' };
        let v = percent_encoding::utf8_percent_encode(value, crate::http::URI_COMPONENT);
        format!("{}{sep}{key}={v}", self.absolute(target))
    }

    /// The URL of an API route (`path` under the base path).
    pub fn api_url(&self, path: &str) -> String {
        format!("{}{}{path}", self.base, crate::BASE_PATH)
    }
}

#[cfg(test)]
mod tests {
    use super::Links;

    #[test]
    fn links_on_the_base_url() {
        let l = Links::new("https://auth.example.com/");
        assert_eq!(l.absolute("/done"), "https://auth.example.com/done");
        assert_eq!(
            l.absolute("https://app.example.com/x"),
            "https://app.example.com/x"
        );
        assert_eq!(
            l.with_query("/cb?a=1", "error", "INVALID TOKEN"),
            "https://auth.example.com/cb?a=1&error=INVALID%20TOKEN"
        );
        assert_eq!(
            l.api_url("/verify-email"),
            "https://auth.example.com/api/auth/verify-email"
        );
    }
}
