// Where to go after sign-in, sign-up or an invitation: only a path of this site, so a crafted
// link cannot send a user elsewhere (`//evil.example`, `/\evil`, `javascript:` are refused).
export function safeRedirect(target: string | null | undefined, fallback = "/account"): string {
  if (!target || !target.startsWith("/") || target.startsWith("//") || target.startsWith("/\\")) {
    return fallback;
  }
  if (/[\u0000-\u001f\\]/.test(target)) return fallback;
  try {
    const url = new URL(target, "http://gatehouse.invalid");
    if (url.origin !== "http://gatehouse.invalid") return fallback;
    return url.pathname + url.search + url.hash;
  } catch {
    return fallback;
  }
}

/** `path?redirectTo=…` when there is somewhere to come back to. */
export function withRedirect(path: string, redirectTo: string | null, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams(extra);
  if (redirectTo) q.set("redirectTo", safeRedirect(redirectTo));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** An absolute http(s) URL whose origin the server trusts (`trustedOrigins` of
 * /page-settings, matched as the server matches them: equal, or with `*` and `?` wildcards, a
 * pattern without a scheme against the host part), as the URL parser writes it; else null. */
export function trustedUrl(target: string | null | undefined, patterns: readonly string[]): string | null {
  if (!target || !/^https?:\/\//i.test(target) || /[\u0000-\u0020\\]/.test(target)) return null;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return null;
  }
  if (url.username || url.password) return null;
  const host = url.origin.replace(/^https?:\/\//, "");
  const trusted = patterns.some((p) => (p.includes("*") || p.includes("?") ? glob(p, p.includes("://") ? url.origin : host) : p === url.origin));
  return trusted ? url.href : null;
}

function glob(pattern: string, text: string): boolean {
  const re = Array.from(pattern, (c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\/]/g, "\\$&"))).join("");
  return new RegExp(`^${re}$`).test(text);
}

/** Where a sign-in leads for `target`: a path of this site (an address of this origin becomes
 * one), an address of a trusted origin (the tenant's app), else the fallback path. */
export function landing(
  target: string | null | undefined,
  patterns: readonly string[],
  here: string = window.location.origin,
): { path: string } | { url: string } {
  if (target && /^https?:\/\//i.test(target)) {
    try {
      const url = new URL(target);
      if (url.origin === here) return { path: safeRedirect(url.pathname + url.search + url.hash) };
    } catch {
      return { path: safeRedirect(null) };
    }
    const url = trustedUrl(target, patterns);
    return url ? { url } : { path: safeRedirect(null) };
  }
  return { path: safeRedirect(target) };
}
