import { expect, it } from "vitest";
import { landing, safeRedirect, trustedUrl, withRedirect } from "../redirect";
import { ago, describeDevice } from "../ua";
import { slugify } from "../pages/organizations";

it("keeps only local redirect targets", () => {
  expect(safeRedirect("/organizations/o1?tab=1#x")).toBe("/organizations/o1?tab=1#x");
  expect(safeRedirect("/accept-invitation/abc")).toBe("/accept-invitation/abc");
  for (const bad of ["https://evil.example/", "//evil.example", "/\\evil.example", "javascript:alert(1)", "", null, "/a\nb", "evil"]) {
    expect(safeRedirect(bad)).toBe("/account");
  }
  expect(withRedirect("/sign-in", "//evil", { email: "a@b.c" })).toBe("/sign-in?email=a%40b.c&redirectTo=%2Faccount");
});

it("follows a sign-in back to an origin the server trusts, as the server matches it", () => {
  const trusted = ["http://localhost:3000", "https://app.example.com", "*.acme.example", "https://*.shop.example"];
  expect(trustedUrl("https://app.example.com/dash?x=1#y", trusted)).toBe("https://app.example.com/dash?x=1#y");
  expect(trustedUrl("HTTPS://APP.example.com:443/", trusted)).toBe("https://app.example.com/");
  expect(trustedUrl("http://eu.acme.example/x", trusted)).toBe("http://eu.acme.example/x");
  expect(trustedUrl("https://a.shop.example/", trusted)).toBe("https://a.shop.example/");
  for (const bad of [
    "http://app.example.com/", // another scheme
    "https://app.example.com:8443/", // another port
    "https://app.example.com.evil.example/",
    "https://evil.example/?https://app.example.com",
    "http://a.shop.example/", // the pattern names its scheme
    "https://user:pw@app.example.com/",
    "https://app.example.com/a\nb",
    "javascript:alert(1)",
    "//app.example.com/",
    null,
  ]) {
    expect(trustedUrl(bad, trusted)).toBeNull();
  }
  const here = "http://localhost:3000";
  expect(landing("https://app.example.com/dash", trusted, here)).toEqual({ url: "https://app.example.com/dash" });
  expect(landing("http://localhost:3000/organizations?x=1", trusted, here)).toEqual({ path: "/organizations?x=1" });
  expect(landing("/organizations", trusted, here)).toEqual({ path: "/organizations" });
  expect(landing("https://evil.example/", trusted, here)).toEqual({ path: "/account" });
  expect(landing("https://app.example.com/dash", [], here)).toEqual({ path: "/account" });
  expect(landing(null, trusted, here)).toEqual({ path: "/account" });
});

it("describes devices and ages", () => {
  expect(describeDevice("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/156.0 Safari/537.36")).toBe("Chrome on Linux");
  expect(describeDevice("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1")).toBe("Safari on iOS");
  expect(describeDevice("curl/8.5.0")).toBe("curl");
  expect(describeDevice(null)).toBe("Unknown device");
  const now = Date.parse("2026-11-24T12:00:00Z");
  expect(ago("2026-11-24T11:59:30Z", now)).toBe("just now");
  expect(ago("2026-11-24T11:55:00Z", now)).toBe("5 minutes ago");
  expect(ago("2026-11-21T12:00:00Z", now)).toBe("3 days ago");
});

it("derives slugs from names", () => {
  expect(slugify("Acme Corp.")).toBe("acme-corp");
  expect(slugify("  Éclair & Co  ")).toBe("eclair-co");
});
