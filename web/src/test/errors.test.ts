import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe as group, expect, it } from "vitest";
import { ApiError } from "../api";
import { describe, describeRedirectError, messages } from "../errors";

const doc = JSON.parse(readFileSync(resolve(process.cwd(), "../openapi/openapi.json"), "utf8"));
const codes: string[] = doc.components.schemas.Error.properties.code.enum;

group("error messages", () => {
  it("the OpenAPI document lists the server's codes", () => {
    expect(codes.length).toBeGreaterThan(100);
    expect(codes).toContain("INVALID_EMAIL_OR_PASSWORD");
  });

  it("every code the server can send has a sentence", () => {
    const table = messages as Record<string, string>;
    for (const code of codes) {
      expect(table[code], code).toMatch(/^[A-Z].*[.!?]$/);
    }
  });

  it("the table names no code the server does not send", () => {
    const extra = Object.keys(messages).filter((c) => !codes.includes(c) && c !== "NETWORK_ERROR" && c !== "UNEXPECTED_RESPONSE");
    expect(extra).toEqual([]);
  });

  it("describes a refusal by its code, not the server's wording", () => {
    expect(describe(new ApiError("INVALID_EMAIL_OR_PASSWORD", "Invalid email or password", 401))).toBe("The email or the password is wrong.");
    expect(describe(new Error("boom"))).toBe(messages.UNEXPECTED_RESPONSE);
  });

  it("describes redirect codes, known or not", () => {
    expect(describeRedirectError("please_restart_the_process")).toMatch(/start again/);
    expect(describeRedirectError("INVALID_TOKEN")).toBe(messages.INVALID_TOKEN);
    expect(describeRedirectError("weird_thing")).toBe("Something went wrong (weird thing).");
  });
});
