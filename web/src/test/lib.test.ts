import { expect, it } from "vitest";
import { safeRedirect, withRedirect } from "../redirect";
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
