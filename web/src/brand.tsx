// The tenant's look (`[ui]` in the server's configuration, read from GET /page-settings): its
// accent colour, its logo, whom to write to for help, and where a sign-in with nowhere else to
// go leads. The colour is set through the CSSOM (the pages' Content-Security-Policy allows no
// inline style).
import { useEffect } from "react";
import { useNavigate } from "react-router";
import { useTx } from "./i18n";
import { landing } from "./redirect";
import { usePageSettings } from "./settings";

/** Black or white, whichever reads better on `hex` (`#rgb` / `#rrggbb`). */
export function textOn(hex: string): string {
  const h = hex.replace("#", "");
  const full = h.length === 3 ? [...h].map((c) => c + c).join("") : h;
  const lin = (i: number) => {
    const c = parseInt(full.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * lin(0) + 0.7152 * lin(2) + 0.0722 * lin(4);
  // The foreground with the higher contrast ratio against the colour.
  return (1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.05) ? "#fff" : "#000";
}

/** Applies the tenant's accent colour to every page. */
export function useBrandColor() {
  const color = usePageSettings().primaryColor;
  useEffect(() => {
    const root = document.documentElement.style;
    if (!color) return;
    root.setProperty("--accent", color);
    root.setProperty("--accent-fg", textOn(color));
    return () => {
      root.removeProperty("--accent");
      root.removeProperty("--accent-fg");
    };
  }, [color]);
}

export function Logo() {
  const logo = usePageSettings().logoUrl;
  return logo ? <img className="logo" src={logo} alt="" /> : null;
}

/** "Need help? Write to …", when the tenant gave an address. */
export function SupportLine() {
  const email = usePageSettings().supportEmail;
  const tx = useTx();
  if (!email) return null;
  return (
    <p className="muted support">{tx("Need help? Write to {email}.", { email: <a href={`mailto:${email}`}>{email}</a> })}</p>
  );
}

/** Where a sign-in (or sign-up) leads: the page's `redirectTo` when it had one (a path here,
 * or an address of an origin the server trusts: the tenant's app), else the tenant's home
 * (`ui.home_url`: a path here, or a URL of its app), else the account. */
export function useAfterSignIn(redirectTo: string | null): (state?: unknown) => void {
  const navigate = useNavigate();
  const { homeUrl, trustedOrigins } = usePageSettings();
  return (state?: unknown) => {
    const to = landing(redirectTo ?? homeUrl, trustedOrigins);
    if ("url" in to) {
      window.location.assign(to.url);
      return;
    }
    navigate(to.path, { replace: true, state });
  };
}
