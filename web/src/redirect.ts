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
