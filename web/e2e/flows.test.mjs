// End to end in a real browser: Debian's Chromium driven by playwright-core against the real
// gatehouse binary (GATEHOUSE_BIN, default ../target/debug/gatehouse) on a free port with a
// fresh data dir; mail is read from that dir's outbox. Each page is saved as a screenshot
// under e2e/screenshots/ (GATEHOUSE_SCREENSHOTS to change it).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { createServer as createHttpServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createHmac } from "node:crypto";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(process.env.GATEHOUSE_BIN ?? join(here, "../../target/debug/gatehouse"));
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const SHOTS = resolve(process.env.GATEHOUSE_SCREENSHOTS ?? join(here, "screenshots"));
const TIMEOUT = 15_000;

let server;
let base;
let dataDir;
let browser;
const seen = new Set();

/** This process's environment without its own GATEHOUSE_* settings (GATEHOUSE_BIN). */
function baseEnv() {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GATEHOUSE_")));
}

function serverEnv() {
  return {
    ...baseEnv(),
    GATEHOUSE_LISTEN: "127.0.0.1:0",
    GATEHOUSE_DATA_DIR: dataDir,
    GATEHOUSE_EMAIL_VERIFICATION__SEND_ON_SIGN_UP: "true",
    GATEHOUSE_LOG__LEVEL: "warn",
    // These flows sign in more often than the limiter allows one address.
    GATEHOUSE_RATE_LIMIT__ENABLED: "false",
    // The webhook flow's receiver listens on loopback, over http.
    GATEHOUSE_WEBHOOKS__ALLOW_HTTP: "true",
    GATEHOUSE_WEBHOOKS__ALLOW_PRIVATE_ADDRESSES: "true",
  };
}

function startServer() {
  dataDir = mkdtempSync(join(tmpdir(), "gatehouse-e2e-"));
  return startGatehouse(serverEnv()).then(([child, url]) => {
    server = child;
    return url;
  });
}

/** Starts a gatehouse with `env`; answers the process and its base URL once it listens. */
function startGatehouse(env) {
  const child = spawn(BIN, [], { env, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((ok, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error(`gatehouse did not start: ${out}`)), 30_000);
    child.on("exit", (code) => fail(new Error(`gatehouse exited with ${code}: ${out}`)));
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners("exit");
        ok([child, `http://localhost:${m[1]}`]);
      }
    });
  });
}

/** The newest unread mail of `kind` to `to`, waiting for it (mail leaves after the answer).
 * Only `.json` files: a message is written as `.tmp` first, then renamed. */
async function mail(kind, to) {
  const outbox = join(dataDir, "outbox");
  for (let i = 0; i < 100; i++) {
    const files = existsSync(outbox) ? readdirSync(outbox).filter((f) => f.endsWith(".json") && f.includes(`-${kind}-`) && !seen.has(f)).sort() : [];
    for (const f of files.reverse()) {
      const m = JSON.parse(readFileSync(join(outbox, f), "utf8"));
      if (m.to === to) {
        seen.add(f);
        return m;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no ${kind} mail to ${to}`);
}

/** The link of the newest unread mail of `kind` to `to`. */
async function mailLink(kind, to) {
  return (await mail(kind, to)).link;
}

/** The code of the newest unread `email-otp` mail to `to` (its subject's first word). */
async function mailCode(to) {
  return (await mail("email-otp", to)).subject.split(" ")[0];
}

async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  console.log(`screenshot: ${join(SHOTS, `${name}.png`)}`);
}

async function newPage(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 }, ...options });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  // Console errors, with the page they came from ("404" answers are the app's expected refusals).
  page.on("console", (m) => m.type() === "error" && !/status of 4\d\d/.test(m.text()) && errors.push(`${m.location().url} ${m.text()}`));
  return { context, page, errors };
}

async function signUp(page, name, email, password) {
  await page.goto(`${base}/sign-up`);
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Create account" }).click();
  await page.getByRole("heading", { name: "Your account" }).waitFor();
}

async function signIn(page, email, password) {
  await page.goto(`${base}/sign-in`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { name: "Your account" }).waitFor();
}

before(async () => {
  assert.ok(existsSync(BIN), `no gatehouse binary at ${BIN} (cargo build first)`);
  rmSync(SHOTS, { recursive: true, force: true });
  base = await startServer();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  server?.removeAllListeners("exit");
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

test("account: sign up, verify, sign out and in, change password, another browser signed out, reset, delete", async () => {
  const a = await newPage();
  const { page } = a;
  await page.goto(`${base}/`);
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await page.goto(`${base}/sign-up`);
  // The password rules are said before anything is typed.
  await page.getByText("At least 8 characters.").waitFor();
  await page.getByRole("button", { name: "Create account" }).click();
  await page.getByText("Enter your name.").waitFor();
  await shot(page, "sign-up-validation");
  await signUp(page, "Ann", "ann@example.com", "first-password-1");
  await page.getByText("not verified").waitFor();
  // This server mails a link with the sign-up (email_verification.send_on_sign_up): said so.
  await page.getByText("Check your inbox: we sent a link to ann@example.com.", { exact: false }).waitFor();
  await page.getByRole("button", { name: "Send the verification link again" }).waitFor();
  await shot(page, "account");

  await page.goto(await mailLink("verify-email", "ann@example.com"));
  await page.getByText("Your email address is verified.").waitFor();
  assert.match(page.url(), /\/verify-email$/);
  await shot(page, "verify-email");

  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await page.getByLabel("Email").fill("ann@example.com");
  await page.getByLabel("Password", { exact: true }).fill("wrong-password");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByText("The email or the password is wrong.").waitFor();
  await shot(page, "sign-in-refused");
  await signIn(page, "ann@example.com", "first-password-1");
  await page.getByText("verified", { exact: true }).waitFor();

  const b = await newPage({ userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1", viewport: { width: 390, height: 844 } });
  await signIn(b.page, "ann@example.com", "first-password-1");
  await shot(b.page, "account-phone");
  await page.reload();
  const sessions = page.getByRole("list", { name: "Your sessions" }).getByRole("listitem");
  await assert.doesNotReject(sessions.nth(1).waitFor());
  assert.match(await sessions.first().textContent(), /this session/);
  assert.match(await sessions.nth(1).textContent(), /Safari on iOS/);

  await page.getByLabel("Current password", { exact: true }).fill("first-password-1");
  await page.getByLabel("New password", { exact: true }).fill("second-password-2");
  await page.getByRole("button", { name: "Change password" }).click();
  await page.getByText(/Your password was changed and your other sessions were signed out/).waitFor();
  await shot(page, "account-password-changed");
  await b.page.goto(`${base}/account`);
  await b.page.getByRole("heading", { name: "Sign in" }).waitFor();
  assert.match(b.page.url(), /\/sign-in\?redirectTo=(%2F|\/)account$/);

  await b.page.getByRole("link", { name: "Forgot your password?" }).click();
  await b.page.getByLabel("Email").fill("ann@example.com");
  await b.page.getByRole("button", { name: "Send the link" }).click();
  await b.page.getByText(/we sent it a link/).waitFor();
  await shot(b.page, "forgot-password");
  await b.page.goto(await mailLink("reset-password", "ann@example.com"));
  await b.page.getByRole("heading", { name: "Choose a new password" }).waitFor();
  assert.match(b.page.url(), /\/reset-password\?token=/);
  await b.page.getByLabel("New password", { exact: true }).fill("third-password-3");
  await b.page.getByLabel("Repeat the new password", { exact: true }).fill("third-password-3");
  await shot(b.page, "reset-password");
  await b.page.getByRole("button", { name: "Set the new password" }).click();
  // A reset signs the account out everywhere (the default), and the page says so.
  await b.page.getByText("every device signed in to your account was signed out", { exact: false }).waitFor();
  await page.goto(`${base}/account`);
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await signIn(b.page, "ann@example.com", "third-password-3");

  // Deleting asks for the password, mails a link, and the link (in this browser) deletes.
  await b.page.getByRole("button", { name: "Delete my account…" }).click();
  const dialog = b.page.getByRole("dialog", { name: "Delete your account?" });
  await dialog.getByLabel("Password", { exact: true }).fill("third-password-3");
  await shot(b.page, "delete-account-dialog");
  await dialog.getByRole("button", { name: "Delete account" }).click();
  await b.page.getByText(/We sent a confirmation link/).waitFor();
  await b.page.goto(await mailLink("delete-account", "ann@example.com"));
  await b.page.getByRole("heading", { name: "Sign in" }).waitFor();
  await b.page.getByLabel("Email").fill("ann@example.com");
  await b.page.getByLabel("Password", { exact: true }).fill("third-password-3");
  await b.page.getByRole("button", { name: "Sign in", exact: true }).click();
  await b.page.getByText("The email or the password is wrong.").waitFor();

  await page.goto(`${base}/error?error=please_restart_the_process`);
  await page.getByText(/Please start again/).waitFor();
  await shot(page, "error-page");
  assert.deepEqual([...a.errors, ...b.errors], []);
  await a.context.close();
  await b.context.close();
});

test("by mail: sign up by code, sign in by link on a phone, reset by code", async () => {
  const a = await newPage();
  const { page } = a;
  await page.goto(`${base}/sign-up`);
  await page.getByLabel("Name").fill("Otto");
  await page.getByLabel("Email").fill("otto@example.com");
  await page.getByRole("button", { name: "Email me a code" }).click();
  await page.getByText(/We emailed a 6-digit code to/).waitFor();
  await shot(page, "sign-up-by-code");
  await page.getByLabel("Code from the email").fill(await mailCode("otto@example.com"));
  await page.getByRole("button", { name: "Create account" }).click();
  await page.getByRole("heading", { name: "Your account" }).waitFor();
  // The code proved the address.
  await page.getByText("verified", { exact: true }).waitFor();

  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await page.getByLabel("Email").fill("otto@example.com");
  await page.getByRole("button", { name: "Email me a link" }).click();
  await page.getByText(/we sent a sign-in link to otto@example.com/).waitFor();
  await shot(page, "sign-in-link-sent");
  // Opened on the phone: signed in there.
  const b = await newPage({ viewport: { width: 390, height: 844 } });
  const link = await mailLink("magic-link", "otto@example.com");
  await b.page.goto(link);
  await b.page.getByRole("heading", { name: "Your account" }).waitFor();
  await b.page.getByText("otto@example.com").first().waitFor();
  await shot(b.page, "signed-in-by-link-phone");
  // A link works once.
  await b.page.goto(link);
  await b.page.getByText("This link is invalid or was already used.").waitFor();

  // A code that is wrong three times is dead; a new one signs in.
  await page.goto(`${base}/sign-in`);
  await page.getByLabel("Email").fill("otto@example.com");
  await page.getByRole("button", { name: "Email me a code" }).click();
  const code = await mailCode("otto@example.com");
  const wrong = code === "000000" ? "111111" : "000000";
  for (let i = 0; i < 3; i++) {
    await page.getByLabel("Code from the email").fill(wrong);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByText(/That code is not right/).waitFor();
  }
  await page.getByLabel("Code from the email").fill(code);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByText(/this one no longer works/).waitFor();
  await shot(page, "sign-in-code-dead");
  await page.getByRole("button", { name: "Email me a new code" }).click();
  await page.getByText(/We sent a new code/).waitFor();
  await page.getByLabel("Code from the email").fill(await mailCode("otto@example.com"));
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { name: "Your account" }).waitFor();

  // No password yet: one is set by a code.
  await page.getByRole("button", { name: "Sign out", exact: true }).click();
  await page.goto(`${base}/forgot-password?email=otto%40example.com`);
  await page.getByRole("button", { name: "Email me a code instead" }).click();
  await page.getByLabel("Code from the email").fill(await mailCode("otto@example.com"));
  await page.getByLabel("New password", { exact: true }).fill("otto-password-1");
  await page.getByLabel("Repeat the new password", { exact: true }).fill("otto-password-1");
  await shot(page, "reset-by-code");
  await page.getByRole("button", { name: "Set the new password" }).click();
  await page.getByText("Your password was changed.").waitFor();
  await signIn(page, "otto@example.com", "otto-password-1");
  assert.deepEqual([...a.errors, ...b.errors], []);
  await a.context.close();
  await b.context.close();
});

test("German: a browser that prefers German gets the pages in German, on a phone too; the switcher keeps English", async () => {
  const { context, page, errors } = await newPage({ locale: "de-DE", viewport: { width: 390, height: 844 } });
  await page.goto(`${base}/sign-up`);
  await page.getByRole("heading", { name: "Konto erstellen" }).waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.lang), "de");
  // Field errors in German, before anything is sent.
  await page.getByRole("button", { name: "Konto erstellen" }).click();
  await page.getByText("Geben Sie Ihren Namen ein.").waitFor();
  await page.getByLabel("Name").fill("Greta");
  await page.getByLabel("E-Mail").fill("greta@example.com");
  await page.getByLabel("Passwort", { exact: true }).fill("greta-password-1");
  await page.getByRole("button", { name: "Konto erstellen" }).click();
  await page.getByRole("heading", { name: "Ihr Konto" }).waitFor();
  assert.match(await page.title(), /^Ihr Konto/);
  await shot(page, "german-account-phone");
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 390, "the German account page fits a phone");

  // An organization's pages, its tabs and a refusal from the server in German.
  await page.getByRole("link", { name: "Organisationen" }).click();
  // The account page (its own "Name" fields) may still be shown until the list comes.
  await page.waitForURL(/\/organizations$/);
  await page.getByRole("heading", { name: "Organisationen" }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill("Grün GmbH");
  await page.getByText("✓ grun-gmbh ist frei").waitFor();
  await page.getByRole("button", { name: "Organisation erstellen" }).click();
  await page.getByRole("heading", { name: "Grün GmbH" }).waitFor();
  await page.getByRole("columnheader", { name: "Rolle" }).waitFor();
  await page.getByRole("cell", { name: "Inhaber", exact: true }).waitFor();
  await page.getByRole("link", { name: "Einladungen" }).click();
  await page.getByLabel("E-Mail-Adresse der eingeladenen Person").fill("greta@example.com");
  await page.getByRole("button", { name: "Einladung senden" }).click();
  await page.getByText("Die Person ist schon Mitglied dieser Organisation.").waitFor();
  await page.getByRole("link", { name: "Aktivität" }).click();
  await page.getByRole("cell", { name: "Organisation erstellt" }).waitFor();
  await shot(page, "german-organization-activity-phone");
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 390, "the German activity tab fits a phone");

  // The switcher: English, kept in this browser across a reload.
  await page.getByLabel("Sprache").selectOption("en");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Organizations" }).waitFor();
  await page.reload();
  await page.getByRole("link", { name: "Activity" }).waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.lang), "en");
  assert.deepEqual(errors, []);
  await context.close();
});

test("branded: the tenant's name, logo, colour and help on a phone; a sign-up lands on its home", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-e2e-brand-"));
  const [child, url] = await startGatehouse({
    ...serverEnv(),
    GATEHOUSE_DATA_DIR: dir,
    GATEHOUSE_UI__APP_NAME: "Acme Cloud",
    GATEHOUSE_UI__LOGO_URL: "/favicon.svg",
    GATEHOUSE_UI__PRIMARY_COLOR: "#0a7d33",
    GATEHOUSE_UI__SUPPORT_EMAIL: "help@acme.example",
    GATEHOUSE_UI__HOME_URL: "/organizations",
  });
  try {
    const { context, page, errors } = await newPage({ viewport: { width: 390, height: 844 } });
    await page.goto(`${url}/sign-in`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    const brand = page.getByRole("link", { name: "Acme Cloud" });
    assert.equal(await brand.locator("img").getAttribute("src"), "/favicon.svg");
    // The logo loads (waited for: it may still be on its way when the heading shows).
    const loaded = await brand.locator("img").evaluate(
      (img) =>
        img.complete
          ? img.naturalWidth > 0
          : new Promise((done) => {
              img.addEventListener("load", () => done(img.naturalWidth > 0), { once: true });
              img.addEventListener("error", () => done(false), { once: true });
            }),
    );
    assert.equal(loaded, true);
    await page.waitForFunction(() => document.title === "Sign in — Acme Cloud");
    const button = page.getByRole("button", { name: "Sign in", exact: true });
    assert.equal(await button.evaluate((b) => getComputedStyle(b).backgroundColor), "rgb(10, 125, 51)");
    assert.equal(await page.getByRole("link", { name: "help@acme.example" }).getAttribute("href"), "mailto:help@acme.example");
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 390);
    await shot(page, "branded-sign-in-phone");
    // The mail carries the tenant's name too.
    await page.goto(`${url}/sign-up`);
    await page.getByLabel("Name").fill("Bea");
    await page.getByLabel("Email").fill("bea@example.com");
    await page.getByLabel("Password", { exact: true }).fill("bea-password-1");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL(/\/organizations$/);
    await page.getByRole("heading", { name: "Organizations" }).waitFor();
    await shot(page, "branded-home-phone");
    const mail = readdirSync(join(dir, "outbox")).find((f) => f.endsWith(".json") && f.includes("-verify-email-"));
    assert.match(JSON.parse(readFileSync(join(dir, "outbox", mail), "utf8")).subject, /Acme Cloud/);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The code an authenticator app shows for a base32 `secret`, `offset` steps from now. */
function totp(secret, offset = 0) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of secret) bits += alphabet.indexOf(c).toString(2).padStart(5, "0");
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 30000) + offset));
  const h = createHmac("sha1", key).update(counter).digest();
  const o = h[h.length - 1] & 15;
  return String((h.readUInt32BE(o) & 0x7fffffff) % 1000000).padStart(6, "0");
}

test("two-factor: set up with the QR code's key, a challenged sign-in, a trusted browser, a backup code", async () => {
  const a = await newPage();
  const { page } = a;
  await signUp(page, "Tess", "tess@example.com", "tess-password-1");
  const card = page.getByRole("region", { name: "Two-factor sign-in" });
  await card.locator('input[name="two-factor-password"]').fill("tess-password-1");
  await card.getByRole("button", { name: "Set up" }).click();
  await card.getByRole("img", { name: "QR code for your authenticator app" }).waitFor();
  const secret = (await card.locator("code.secret").textContent()).trim();
  assert.match(secret, /^[A-Z2-7]{32}$/);
  await shot(page, "two-factor-setup");
  await card.getByLabel("Code from the app").fill(totp(secret));
  await card.getByRole("button", { name: "Turn on" }).click();
  const codes = (await card.getByLabel("Backup codes").textContent()).trim().split("\n");
  assert.equal(codes.length, 10);
  await card.getByText("Two-factor sign-in is on.").waitFor();
  await shot(page, "two-factor-backup-codes");
  await card.getByRole("button", { name: "Done" }).click();

  // A challenged sign-in (the next step's code: the one used to set up works once).
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await page.getByLabel("Email").fill("tess@example.com");
  await page.getByLabel("Password", { exact: true }).fill("tess-password-1");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { name: "Two-factor sign-in" }).waitFor();
  await page.getByLabel("Authentication code").fill("000000");
  await page.getByRole("button", { name: "Verify" }).click();
  await page.getByText("That code is not right, or it was used already.").waitFor();
  await shot(page, "two-factor-challenge");
  await page.getByLabel("Authentication code").fill(totp(secret, 1));
  await page.getByLabel("Trust this browser for 30 days").check();
  await page.getByRole("button", { name: "Verify" }).click();
  await page.getByRole("heading", { name: "Your account" }).waitFor();

  // This browser is trusted: no second step.
  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(page, "tess@example.com", "tess-password-1");

  // Another browser: a backup code, once.
  const b = await newPage();
  await b.page.goto(`${base}/sign-in`);
  await b.page.getByLabel("Email").fill("tess@example.com");
  await b.page.getByLabel("Password", { exact: true }).fill("tess-password-1");
  await b.page.getByRole("button", { name: "Sign in", exact: true }).click();
  await b.page.getByRole("button", { name: "Use a backup code instead" }).click();
  await b.page.getByLabel("Backup code").fill(codes[0]);
  await b.page.getByRole("button", { name: "Verify" }).click();
  await b.page.getByRole("heading", { name: "Your account" }).waitFor();
  assert.deepEqual([...a.errors, ...b.errors], []);
  await a.context.close();
  await b.context.close();
});

test("passkeys: add one on the account page, sign in with it alone, rename, remove", async () => {
  const a = await newPage();
  const { page, context } = a;
  // Chromium's virtual authenticator (DevTools protocol): a platform authenticator with
  // discoverable credentials that verifies its user and is always touched.
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  await signUp(page, "Pam", "pam@example.com", "pam-password-1");
  const card = page.getByRole("region", { name: "Passkeys" });
  await card.getByText("No passkeys yet.").waitFor();
  await card.getByRole("button", { name: "Add a passkey" }).click();
  await card.getByText("Passkey added. You can sign in with it now.").waitFor();
  const list = card.getByRole("list", { name: "Your passkeys" });
  await list.getByText("never used yet").waitFor();
  const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  assert.equal(credentials.length, 1);
  assert.ok(credentials[0].isResidentCredential, "a discoverable credential");
  // Chromium's authenticator takes the first algorithm offered, EdDSA (as better-auth offers
  // it): an Ed25519 key, which the server checks itself.
  const [stored] = await page.evaluate(async () => (await fetch("/api/auth/passkey/list-user-passkeys")).json());
  const cose = Buffer.from(stored.publicKey, "base64").toString("hex");
  assert.ok(cose.startsWith("a401010327"), `kty OKP, alg EdDSA: ${cose}`);
  await shot(page, "passkeys-account");

  // Signed out, the button: the passkey alone signs in (no address, no password). The
  // authenticator is not touched while the page loads, so the autofill's request waits
  // (the virtual authenticator answers a waiting request only if touched when it began).
  const presence = (enabled) => cdp.send("WebAuthn.setAutomaticPresenceSimulation", { authenticatorId, enabled });
  await presence(false);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await shot(page, "passkeys-sign-in");
  await presence(true);
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  await page.getByRole("heading", { name: "Your account" }).waitFor();
  await list.getByText(/last used/).waitFor();
  const after = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  assert.ok(after.credentials[0].signCount >= 1, "the authenticator signed");

  // Signed out, the autofill: the email field offers the passkey; picked (the virtual
  // authenticator picks it at once), it signs in without a click.
  const autofilled = page.waitForResponse((r) => r.url().endsWith("/passkey/verify-authentication") && r.status() === 200);
  await page.getByRole("button", { name: "Sign out" }).click();
  await autofilled;
  await page.getByRole("heading", { name: "Your account" }).waitFor();

  // Rename, then remove it (the password stays, so it is not the last way to sign in).
  // Named after the browser and device it was added on.
  const added = (await list.locator("strong").first().textContent()).trim();
  assert.match(added, /on Linux$/);
  await list.getByRole("button", { name: `Rename ${added}` }).click();
  await card.getByLabel(`New name for ${added}`).fill("This laptop");
  await card.getByRole("button", { name: "Save" }).click();
  await card.getByText("Passkey renamed.").waitFor();
  await list.getByText("This laptop").waitFor();
  await list.getByRole("button", { name: "Remove This laptop" }).click();
  await page.getByRole("dialog", { name: "Remove This laptop?" }).getByRole("button", { name: "Remove" }).click();
  await card.getByText("No passkeys yet.").waitFor();

  // The authenticator still holds it, but the server does not know it any more.
  await presence(false);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await presence(true);
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  await page.getByText("That passkey is not registered here.").waitFor();
  assert.deepEqual(a.errors, []);
  await context.close();
});

test("API keys: make one on the account page, a script uses it with fetch, revoke it", async () => {
  const a = await newPage();
  const { page, context } = a;
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  await signUp(page, "Kay", "kay@example.com", "kay-password-1");
  const card = page.getByRole("region", { name: "API keys" });
  await card.getByText("No keys yet.").waitFor();
  await card.getByLabel("Key name").fill("deploy script");
  await card.getByLabel("Expires").selectOption("30 days");
  await card.getByRole("button", { name: "Make a key" }).click();
  const shown = card.getByLabel("New API key");
  await shown.waitFor();
  const key = (await shown.textContent()).trim();
  assert.equal(key.length, 64);
  await card.getByRole("button", { name: "Copy" }).click();
  await card.getByRole("button", { name: "Copied" }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);
  const list = card.getByRole("list", { name: "API keys" });
  await list.getByText("deploy script").waitFor();
  await list.getByText(`${key.slice(0, 6)}…`).waitFor();
  await shot(page, "api-keys-account");
  await card.getByRole("button", { name: "Done" }).click();
  assert.equal(await card.getByLabel("New API key").count(), 0, "shown once");

  // A script (no cookie, the key alone) reads the session as Kay.
  const asScript = (k) => fetch(`${base}/api/auth/get-session`, { headers: { "x-api-key": k } });
  const used = await asScript(key);
  assert.equal(used.status, 200);
  assert.equal((await used.json()).user.email, "kay@example.com");
  await page.reload();
  await list.getByText(/last used/).waitFor();

  // Revoked: the script is refused at once.
  await list.getByRole("button", { name: "Revoke deploy script" }).click();
  await page.getByRole("dialog", { name: "Revoke deploy script?" }).getByRole("button", { name: "Revoke" }).click();
  await card.getByText(/revoked: it works no more/).waitFor();
  await card.getByText("No keys yet.").waitFor();
  const refused = await asScript(key);
  assert.equal(refused.status, 401);
  assert.equal((await refused.json()).code, "INVALID_API_KEY");
  assert.deepEqual(a.errors, []);
  await context.close();
});

/** A webhook receiver on a free loopback port: its URL and the requests it got. */
async function webhookReceiver() {
  const got = [];
  const server = createHttpServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      got.push({ headers: req.headers, body });
      res.end("ok");
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { url: `http://localhost:${server.address().port}/hook`, got, close: () => server.close() };
}

/** Whether a delivery carries a Standard Webhooks signature by `secret` (whsec_…). */
function signedBy(delivery, secret) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const h = delivery.headers;
  const mac = createHmac("sha256", key).update(`${h["webhook-id"]}.${h["webhook-timestamp"]}.${delivery.body}`).digest("base64");
  return h["webhook-signature"].split(" ").includes(`v1,${mac}`);
}

test("webhooks: an owner adds an endpoint, sees its secret once, hears of a change, signed", async () => {
  const rx = await webhookReceiver();
  const a = await newPage();
  const { page, context } = a;
  await signUp(page, "Wanda", "wanda@example.com", "wanda-password-1");
  await page.getByRole("link", { name: "Organizations" }).click();
  await page.waitForURL(/\/organizations$/);
  await page.getByRole("heading", { name: "Organizations" }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill("Hook Labs");
  await page.getByRole("button", { name: "Create organization" }).click();
  await page.getByRole("heading", { name: "Hook Labs" }).waitFor();
  await page.getByRole("link", { name: "Webhooks" }).click();
  const card = page.getByRole("region", { name: "Webhooks" });
  await card.getByText("No endpoints yet.").waitFor();
  await card.getByLabel("Endpoint URL").fill(rx.url);
  await card.getByLabel(/The organization changed/).check();
  await card.getByRole("button", { name: "Add the endpoint" }).click();
  const shown = card.getByLabel("Signing secret");
  await shown.waitFor();
  const secret = (await shown.textContent()).trim();
  assert.match(secret, /^whsec_/);
  await shot(page, "organization-webhooks");
  await card.getByRole("button", { name: "Done" }).click();
  assert.equal(await card.getByLabel("Signing secret").count(), 0, "shown once");

  // A change of the organization reaches the receiver, signed with that secret.
  await page.getByRole("link", { name: "Settings" }).click();
  await page.getByLabel("Name", { exact: true }).fill("Hook Labs Two");
  const saved = page.waitForResponse((r) => r.url().endsWith("/organization/update") && r.request().method() === "POST");
  await page.getByRole("button", { name: "Save" }).click();
  assert.equal((await saved).status(), 200);
  for (let i = 0; i < 100 && rx.got.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(rx.got.length, 1);
  const body = JSON.parse(rx.got[0].body);
  assert.equal(body.type, "organization.updated");
  assert.equal(body.data.name, "Hook Labs Two");
  assert.ok(signedBy(rx.got[0], secret), "signed with the secret shown");

  // The delivery, listed with its answer.
  await page.getByRole("link", { name: "Webhooks" }).click();
  await card.getByRole("button", { name: `Deliveries to ${rx.url}` }).click();
  const table = card.getByRole("table", { name: `Deliveries to ${rx.url}` });
  await table.getByText("organization.updated").waitFor();
  await table.getByText(/answered 200/).waitFor();
  await shot(page, "organization-webhook-deliveries");
  assert.deepEqual(a.errors, []);
  await context.close();
  rx.close();
});

// Picks Bob's role on the owner's page and waits for the server's answer: the page sends the
// change after the pick, and the other browser reloads next and must see it.
async function setRoleOfBob(page, role) {
  const answered = page.waitForResponse(
    (r) => r.url().endsWith("/organization/update-member-role") && r.request().method() === "POST",
  );
  await page.getByRole("combobox", { name: "Role of Bob" }).selectOption(role);
  await page.getByRole("dialog", { name: `Make Bob ${role}?` }).getByRole("button", { name: "Change role" }).click();
  assert.equal((await answered).status(), 200);
  await page.getByText(`Bob is now ${role}.`).waitFor();
}

test("organizations: create, invite, accept from the mail as a new user, change role, custom role", async () => {
  const owner = await newPage();
  const o = owner.page;
  await signUp(o, "Olga", "olga@example.com", "olga-password-1");
  await o.getByRole("link", { name: "Organizations" }).click();
  await o.getByLabel("Name").fill("Acme Labs");
  await o.getByText("✓ acme-labs is available").waitFor();
  await shot(o, "organizations");
  await o.getByRole("button", { name: "Create organization" }).click();
  await o.getByRole("heading", { name: "Acme Labs" }).waitFor();
  await shot(o, "organization-members");

  await o.getByRole("link", { name: "Invitations" }).click();
  await o.getByLabel("Email to invite").fill("bob@example.com");
  await o.getByRole("button", { name: "Send invitation" }).click();
  await o.getByText("Invitation sent.").waitFor();
  await o.getByText(/bob@example\.com · member · pending/).waitFor();
  await shot(o, "organization-invitations");

  const member = await newPage({ colorScheme: "dark" });
  const m = member.page;
  const link = await mailLink("invitation", "bob@example.com");
  assert.match(link, /\/accept-invitation\/[^/?]+\?email=bob%40example\.com$/);
  await m.goto(link);
  await m.getByRole("heading", { name: "Your invitation" }).waitFor();
  await shot(m, "accept-invitation-signed-out");
  await m.getByRole("link", { name: "Create an account" }).click();
  assert.equal(await m.getByLabel("Email").inputValue(), "bob@example.com");
  await m.getByLabel("Name").fill("Bob");
  await m.getByLabel("Password", { exact: true }).fill("bob-password-1");
  await m.getByRole("button", { name: "Create account" }).click();
  await m.getByRole("heading", { name: "Invitation" }).waitFor();
  await m.getByText(/invites you to join Acme Labs as member/).waitFor();
  await shot(m, "accept-invitation");
  await m.getByRole("button", { name: "Accept" }).click();
  await m.getByRole("heading", { name: "Acme Labs" }).waitFor();
  await m.getByText("You joined Acme Labs.").waitFor();
  const orgPage = m.url();
  // The verification mailed at that sign-up comes back to where Bob was going.
  const invitationPath = new URL(link).pathname;
  await m.goto(await mailLink("verify-email", "bob@example.com"));
  await m.getByText("Your email address is verified.").waitFor();
  assert.equal(await m.getByRole("link", { name: "Continue", exact: true }).getAttribute("href"), invitationPath);
  await m.goto(orgPage);
  await m.getByRole("heading", { name: "Acme Labs" }).waitFor();
  await m.getByRole("row", { name: /Olga/ }).waitFor();
  assert.equal(await m.getByRole("combobox", { name: "Role of Olga" }).count(), 0);
  await m.getByRole("link", { name: "Invitations" }).click();
  await m.getByRole("heading", { name: "Invitations" }).waitFor();
  assert.equal(await m.getByRole("button", { name: "Send invitation" }).count(), 0);
  await shot(m, "organization-as-member-dark");

  await o.getByRole("link", { name: "Members" }).click();
  await o.reload();
  await setRoleOfBob(o, "admin");
  await o.getByRole("row", { name: /Bob/ }).getByRole("combobox").waitFor();
  await m.reload();
  await m.getByRole("button", { name: "Send invitation" }).waitFor();

  await o.getByRole("link", { name: "Roles" }).click();
  await o.getByRole("button", { name: "New role" }).click();
  await o.getByLabel("Role name").fill("recruiter");
  await o.locator('input[name="invitation:create"]').check();
  await o.locator('input[name="member:create"]').check();
  await shot(o, "organization-roles-editor");
  await o.getByRole("button", { name: "Create role" }).click();
  await o.getByText("invitation: create · member: create").waitFor();
  await o.getByRole("link", { name: "Members" }).click();
  await setRoleOfBob(o, "recruiter");
  await m.reload();
  await m.getByRole("link", { name: "Members" }).click();
  await m.getByRole("row", { name: /Bob.*recruiter/ }).waitFor();
  await m.getByRole("link", { name: "Invitations" }).click();
  await m.getByRole("button", { name: "Send invitation" }).waitFor();

  await o.getByRole("link", { name: "Teams" }).click();
  await o.getByLabel("New team").fill("Core");
  await o.getByRole("button", { name: "Create team" }).click();
  await o.getByText("Core", { exact: true }).waitFor();
  await shot(o, "organization-teams");
  await o.getByRole("link", { name: "Settings" }).click();
  await o.getByRole("button", { name: "Delete organization…" }).waitFor();
  await shot(o, "organization-settings");
  // The owner reads what happened in the organization.
  await o.getByRole("link", { name: "Activity" }).click();
  await o.getByRole("row", { name: /Created the organization/ }).waitFor();
  await o.getByRole("row", { name: /Accepted an invitation/ }).first().waitFor();
  await shot(o, "organization-activity");
  // On a phone the tab fits the screen (no sideways scroll), as every tab does.
  await o.setViewportSize({ width: 390, height: 844 });
  for (const tab of ["Activity", "Keys", "Webhooks", "Members", "Invitations", "Teams", "Roles", "Settings"]) {
    await o.getByRole("link", { name: tab }).click();
    await o.getByRole("heading", { name: "Acme Labs" }).waitFor();
    const wide = await o.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, `${tab} is ${wide} px wide on a 390 px screen`);
  }
  await o.getByRole("link", { name: "Activity" }).click();
  await o.getByRole("row", { name: /Created the organization/ }).waitFor();
  await shot(o, "organization-activity-phone");
  assert.deepEqual([...owner.errors, ...member.errors], []);
  await owner.context.close();
  await member.context.close();
});

test("admin: an administrator made with the CLI finds a user, impersonates, stops, bans", async () => {
  const made = spawnSync(BIN, ["user", "create", "--email", "root@example.com", "--name", "Root", "--role", "admin", "--verified", "--password-stdin"], {
    env: serverEnv(),
    input: "root-password-1\n",
    encoding: "utf8",
  });
  assert.equal(made.status, 0, made.stderr);
  const cara = await newPage();
  await signUp(cara.page, "Cara", "cara@example.com", "cara-password-1");

  const admin = await newPage();
  const a = admin.page;
  await signIn(a, "root@example.com", "root-password-1");
  await a.getByRole("link", { name: "Admin" }).click();
  await a.getByRole("heading", { name: "Administration" }).waitFor();
  await a.getByLabel("Search by email").fill("cara");
  const usersRegion = a.getByRole("region", { name: "Users" });
  const row = usersRegion.getByRole("row", { name: /Cara/ });
  await row.waitFor();
  assert.equal(await a.getByRole("region", { name: "Users" }).getByRole("row").count(), 2); // the header and Cara
  await shot(a, "admin");

  await row.getByRole("button", { name: "Impersonate" }).click();
  await a.getByText("Acting as").waitFor();
  await a.getByRole("heading", { name: "Your account" }).waitFor();
  assert.equal(await a.getByLabel("Name", { exact: true }).inputValue(), "Cara");
  await shot(a, "admin-impersonating");
  await a.getByRole("button", { name: "Stop impersonating" }).click();
  await a.getByRole("heading", { name: "Administration" }).waitFor();
  assert.equal(await a.getByText("Acting as").count(), 0);

  await a.getByLabel("Search by email").fill("cara");
  await usersRegion.getByRole("row", { name: /Cara/ }).getByRole("button", { name: "Ban" }).click();
  const dialog = a.getByRole("dialog", { name: "Ban Cara?" });
  await dialog.getByLabel("Reason").fill("spam");
  await dialog.getByRole("button", { name: "Ban" }).click();
  await usersRegion.getByRole("row", { name: /Cara.*banned/ }).waitFor();
  // The audit log has what the admin did.
  await a.reload();
  const log = a.getByRole("region", { name: "Audit log" });
  await log.getByRole("row", { name: /Admin: banned a user/ }).waitFor();
  await log.getByRole("row", { name: /Admin: started impersonating/ }).waitFor();
  await log.getByRole("row", { name: /Admin: stopped impersonating/ }).waitFor();
  await shot(a, "admin-audit-log");
  // A phone's width: the console fits, nothing scrolls sideways.
  await a.setViewportSize({ width: 390, height: 844 });
  await a.getByRole("heading", { name: "Administration" }).waitFor();
  const wide = await a.evaluate(() => document.documentElement.scrollWidth);
  await shot(a, "admin-phone");
  assert.ok(wide <= 390, `the admin page is ${wide} px wide on a 390 px screen`);
  await cara.page.goto(`${base}/account`);
  await cara.page.getByRole("heading", { name: "Sign in" }).waitFor();
  assert.deepEqual([...cara.errors, ...admin.errors], []);
  await cara.context.close();
  await admin.context.close();
});

/** A free loopback port (closed again: the caller binds it next). */
function freePort() {
  return new Promise((ok) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

test("social: Continue with Google through a real OpenID provider, in the browser", async (t) => {
  const peerDir = join(here, "../../api/tests/oidc-peer");
  if (!existsSync(join(peerDir, "node_modules/oidc-provider"))) {
    assert.ok(!process.env.REQUIRE_OIDC, "REQUIRE_OIDC is set but api/tests/oidc-peer has no node_modules");
    t.skip("no oidc-provider (npm ci in api/tests/oidc-peer)");
    return;
  }
  const port = await freePort();
  const peer = spawn("node", ["server.mjs"], {
    cwd: peerDir,
    env: { ...process.env, CLIENT_ID: "gatehouse-e2e", CLIENT_SECRET: "e2e-secret-0123456789", REDIRECT_URIS: `http://localhost:${port}/api/auth/callback/google` },
    stdio: ["ignore", "pipe", "ignore"],
  });
  let gatehouse;
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-e2e-social-"));
  try {
    const issuer = await new Promise((ok, fail) => {
      let out = "";
      peer.on("exit", (code) => fail(new Error(`the OpenID provider exited with ${code}`)));
      peer.stdout.on("data", (chunk) => {
        out += chunk;
        const m = /OIDC_ISSUER=(\S+)/.exec(out);
        if (m) ok(m[1]);
      });
    });
    const [child, url] = await startGatehouse({
      ...baseEnv(),
      GATEHOUSE_LISTEN: `127.0.0.1:${port}`,
      GATEHOUSE_DATA_DIR: dir,
      GATEHOUSE_LOG__LEVEL: "warn",
      GATEHOUSE_SOCIAL__GOOGLE__CLIENT_ID: "gatehouse-e2e",
      GATEHOUSE_SOCIAL__GOOGLE__CLIENT_SECRET: "e2e-secret-0123456789",
      GATEHOUSE_SOCIAL__GOOGLE__AUTHORIZATION_ENDPOINT: `${issuer}/auth`,
      GATEHOUSE_SOCIAL__GOOGLE__TOKEN_ENDPOINT: `${issuer}/token`,
      GATEHOUSE_SOCIAL__GOOGLE__ISSUER: issuer,
      GATEHOUSE_SOCIAL__GOOGLE__JWKS_URI: `${issuer}/jwks`,
    });
    gatehouse = child;
    const { context, page, errors } = await newPage();
    await page.goto(`${url}/sign-in`);
    await shot(page, "sign-in-with-google");
    await page.getByRole("button", { name: "Continue with Google" }).click();
    // The provider's own login page (oidc-provider's), then maybe its consent page.
    await page.locator('input[name="login"]').fill("alice");
    await page.locator('input[name="password"]').fill("any");
    await page.locator('button[type="submit"]').click();
    // Consent, if the provider asks, until the browser is back at Gatehouse.
    for (let i = 0; i < 3; i++) {
      await page.waitForURL((u) => u.origin === url || u.pathname.includes("/interaction/"));
      if (new URL(page.url()).origin === url) break;
      await page.locator('button[type="submit"]').click();
    }
    const account = page.getByRole("heading", { name: "Your account" });
    await account.waitFor();
    assert.equal(new URL(page.url()).origin, url);
    assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "User alice");
    await page.getByText("alice@example.com").waitFor();
    await page.getByRole("heading", { name: "Sign-in methods" }).waitFor();
    await page.getByText("Google", { exact: true }).waitFor();
    await shot(page, "account-after-google");
    // The provider's own pages may fail to load their web fonts here (no outside network).
    assert.deepEqual(errors.filter((e) => typeof e !== "string" || e.startsWith(url)), []);
    await context.close();
  } finally {
    gatehouse?.kill("SIGTERM");
    peer.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
