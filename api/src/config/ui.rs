//! The hosted pages as the tenant's own (`[ui]`): the name, logo and colour they show, whom to
//! write to for help, and where a sign-in with nowhere else to go leads.
use super::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UiConfig {
    /// The name in the pages' header and titles and in mail; empty: `mail.app_name`.
    pub app_name: String,
    /// A logo shown in the header beside the name (an https URL or a path on this server);
    /// empty: none.
    pub logo_url: String,
    /// The pages' accent colour (buttons, links, focus), `#rgb` or `#rrggbb`; empty: the
    /// built-in blue.
    pub primary_color: String,
    /// An address the pages offer for help (the footer, the error page); empty: none.
    pub support_email: String,
    /// Where a sign-in or sign-up with no `redirectTo` leads: a path here (`/account`, the
    /// default when empty) or a URL of a trusted origin (the tenant's app).
    pub home_url: String,
}

impl UiConfig {
    /// Checks the values a page will use (`trusted`: the origins trusted besides the base URL's).
    pub(super) fn check(&self, base_url: &str, trusted: &[String]) -> Result<(), String> {
        let c = self.primary_color.trim();
        let hex = c.strip_prefix('#').unwrap_or("");
        if !c.is_empty()
            && !((hex.len() == 3 || hex.len() == 6) && hex.chars().all(|h| h.is_ascii_hexdigit()))
        {
            return Err(format!(
                "ui.primary_color {c:?}: a colour as #rgb or #rrggbb"
            ));
        }
        let logo = self.logo_url.trim();
        if !(logo.is_empty() || logo.starts_with("https://") || is_local_path(logo)) {
            return Err(format!(
                "ui.logo_url {logo:?}: an https URL or a path on this server"
            ));
        }
        let mail = self.support_email.trim();
        if !mail.is_empty() && crate::plugins::normalize_email(mail).is_none() {
            return Err(format!("ui.support_email {mail:?}: an email address"));
        }
        let home = self.home_url.trim();
        if !home.is_empty()
            && crate::http::TrustedOrigins::new(base_url, trusted)
                .normalize_redirect(home)
                .is_none()
        {
            return Err(format!(
                "ui.home_url {home:?}: a path on this server or a URL of a trusted origin \
                 (trusted_origins)"
            ));
        }
        Ok(())
    }
}

/// `/path`, not `//host` or `/\host`.
fn is_local_path(s: &str) -> bool {
    s.starts_with('/') && !s.starts_with("//") && !s.starts_with("/\\")
}
