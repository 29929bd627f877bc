import { translate, type T } from "./i18n";

const english: T = (s, v) => translate("en", s, v);

// A short, human description of a session's device from its User-Agent.
export function describeDevice(ua: string | null | undefined, t: T = english): string {
  if (!ua) return t("Unknown device");
  const browser = /Edg\//.test(ua)
    ? "Edge"
    : /OPR\//.test(ua)
      ? "Opera"
      : /Firefox\//.test(ua)
        ? "Firefox"
        : /Chrom(e|ium)\//.test(ua)
          ? "Chrome"
          : /Safari\//.test(ua)
            ? "Safari"
            : /curl\//.test(ua)
              ? "curl"
              : /node|undici/i.test(ua)
                ? "Node.js"
                : null;
  const os = /iPhone|iPad/.test(ua)
    ? "iOS"
    : /Android/.test(ua)
      ? "Android"
      : /Windows/.test(ua)
        ? "Windows"
        : /Mac OS X|Macintosh/.test(ua)
          ? "macOS"
          : /Linux/.test(ua)
            ? "Linux"
            : null;
  if (browser && os) return t("{browser} on {os}", { browser, os });
  return browser ?? os ?? ua.slice(0, 40);
}

/** "just now", "5 minutes ago", "3 days ago" (in the language of `t`). */
export function ago(iso: string, now = Date.now(), t: T = english): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (Number.isNaN(s)) return "";
  if (s < 60) return t("just now");
  const units: [number, (n: number) => string][] = [
    [60 * 60 * 24 * 365, (n) => (n === 1 ? t("1 year ago") : t("{n} years ago", { n }))],
    [60 * 60 * 24 * 30, (n) => (n === 1 ? t("1 month ago") : t("{n} months ago", { n }))],
    [60 * 60 * 24, (n) => (n === 1 ? t("1 day ago") : t("{n} days ago", { n }))],
    [60 * 60, (n) => (n === 1 ? t("1 hour ago") : t("{n} hours ago", { n }))],
    [60, (n) => (n === 1 ? t("1 minute ago") : t("{n} minutes ago", { n }))],
  ];
  for (const [size, say] of units) {
    if (s >= size) return say(Math.floor(s / size));
  }
  return t("just now");
}
