// The account page's two-factor card: set up an authenticator app (its QR code drawn here,
// the secret as text, a first code to confirm), backup codes shown once (copy, download),
// new codes, turning it off. Each change asks for the password.
import { useMutation, useQuery } from "@tanstack/react-query";
import QRCode from "qrcode";
import { useState } from "react";
import { api, unwrap, type SessionWithUser } from "../api";
import { ErrorBox, Field, Notice, PasswordField, Submit } from "../components/ui";
import { useSessionChanged } from "../session";
import { useT } from "../i18n";

type Step = { kind: "idle" } | { kind: "confirm"; uri: string; codes: string[] } | { kind: "codes"; codes: string[] };

function secretOf(uri: string): string {
  return new URL(uri).searchParams.get("secret") ?? "";
}

function QrCode({ uri }: { uri: string }) {
  const svg = useQuery({ queryKey: ["qr", uri], queryFn: () => QRCode.toString(uri, { type: "svg", margin: 1 }), staleTime: Infinity });
  const t = useT();
  if (!svg.data) return null;
  return <img className="qr" alt={t("QR code for your authenticator app")} src={`data:image/svg+xml;utf8,${encodeURIComponent(svg.data)}`} width={192} height={192} />;
}

function BackupCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const t = useT();
  const text = codes.join("\n");
  return (
    <div>
      <p>{t("Save these backup codes somewhere safe. Each signs you in once if you lose your authenticator app. They are not shown again.")}</p>
      <pre className="codes" aria-label={t("Backup codes")}>
        {text}
      </pre>
      <div className="row">
        <button
          type="button"
          className="secondary"
          onClick={async () => {
            await navigator.clipboard?.writeText(text);
            setCopied(true);
          }}
        >
          {copied ? t("Copied") : t("Copy")}
        </button>
        <a className="button secondary" download="backup-codes.txt" href={`data:text/plain;charset=utf-8,${encodeURIComponent(text + "\n")}`}>
          {t("Download")}
        </a>
        <button type="button" onClick={onDone}>
          {t("Done")}
        </button>
      </div>
    </div>
  );
}

export function TwoFactor({ me }: { me: SessionWithUser }) {
  const on = me.user.twoFactorEnabled;
  const changed = useSessionChanged();
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");
  const [step, setStep] = useState<Step>({ kind: "idle" });
  const [notice, setNotice] = useState<string | null>(null);
  const t = useT();
  const reset = () => {
    setPassword("");
    setCode("");
  };
  const enable = useMutation({
    mutationFn: () => unwrap(api.POST("/two-factor/enable", { body: { password } })),
    onSuccess: (r) => {
      reset();
      setNotice(null);
      setStep({ kind: "confirm", uri: r.totpURI ?? "", codes: r.backupCodes ?? [] });
    },
  });
  const confirm = useMutation({
    mutationFn: () => unwrap(api.POST("/two-factor/verify-totp", { body: { code: code.trim() } })),
    onSuccess: async () => {
      const codes = step.kind === "confirm" ? step.codes : [];
      reset();
      setStep({ kind: "codes", codes });
      setNotice(t("Two-factor sign-in is on."));
      await changed();
    },
  });
  const regenerate = useMutation({
    mutationFn: () => unwrap(api.POST("/two-factor/generate-backup-codes", { body: { password } })),
    onSuccess: (r) => {
      reset();
      setNotice(null);
      setStep({ kind: "codes", codes: r.backupCodes });
    },
  });
  const disable = useMutation({
    mutationFn: () => unwrap(api.POST("/two-factor/disable", { body: { password } })),
    onSuccess: async () => {
      reset();
      setStep({ kind: "idle" });
      setNotice(t("Two-factor sign-in is off."));
      await changed();
    },
  });
  const error = enable.error ?? confirm.error ?? regenerate.error ?? disable.error;
  return (
    <section className="card" aria-labelledby="two-factor-h">
      <h2 id="two-factor-h">{t("Two-factor sign-in")}</h2>
      {notice && <Notice>{notice}</Notice>}
      {step.kind === "confirm" && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (code.trim()) confirm.mutate();
          }}
          noValidate
        >
          <p>{t("Scan this QR code with your authenticator app, or enter the key by hand. Then enter the 6-digit code it shows.")}</p>
          <QrCode uri={step.uri} />
          <p>
            {t("Key:")} <code className="secret">{secretOf(step.uri)}</code>
          </p>
          <Field label="Code from the app" name="totp-code" autoComplete="one-time-code" value={code} onChange={setCode} />
          <ErrorBox error={error} />
          <div className="row">
            <Submit pending={confirm.isPending}>{t("Turn on")}</Submit>
            <button type="button" className="secondary" onClick={() => setStep({ kind: "idle" })}>
              {t("Cancel")}
            </button>
          </div>
        </form>
      )}
      {step.kind === "codes" && <BackupCodes codes={step.codes} onDone={() => setStep({ kind: "idle" })} />}
      {step.kind === "idle" && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (!password) return;
            if (!on) enable.mutate();
          }}
          noValidate
        >
          <p className="muted">
            {on
              ? t("On: signing in asks for a code from your authenticator app (or a backup code).")
              : t("Off: add a code from an authenticator app to every sign-in, so a stolen password is not enough.")}
          </p>
          <PasswordField label="Password" name="two-factor-password" autoComplete="current-password" value={password} onChange={setPassword} />
          <ErrorBox error={error} />
          {on ? (
            <div className="row">
              <button type="button" className="secondary" disabled={!password || regenerate.isPending} onClick={() => regenerate.mutate()}>
                {t("New backup codes")}
              </button>
              <button type="button" className="danger" disabled={!password || disable.isPending} onClick={() => disable.mutate()}>
                {t("Turn off")}
              </button>
            </div>
          ) : (
            <Submit pending={enable.isPending} disabled={!password}>
              {t("Set up")}
            </Submit>
          )}
        </form>
      )}
    </section>
  );
}
