// The second step of a sign-in for an account with two-factor sign-in on: a code from the
// authenticator app, or one of the backup codes, and whether to trust this browser.
import { useMutation } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { api, unwrap } from "../api";
import { useT } from "../i18n";
import { ErrorBox, Field, Submit } from "./ui";

/** What a sign-in answered when it waits for its second factor. */
export interface Challenge {
  twoFactorRedirect: boolean;
  twoFactorMethods: string[];
}

export function isChallenge(v: unknown): v is Challenge {
  return typeof v === "object" && v !== null && (v as Challenge).twoFactorRedirect === true;
}

type Method = "totp" | "otp" | "backup";

export function SecondStep(props: { challenge: Challenge; onDone: () => void | Promise<void>; onCancel?: () => void }) {
  const offered = props.challenge.twoFactorMethods;
  const totp = offered.includes("totp");
  const otpOnly = !totp && offered.includes("otp");
  const [method, setMethod] = useState<Method>(totp ? "totp" : otpOnly ? "otp" : "backup");
  const backup = method === "backup";
  const [code, setCode] = useState("");
  const [trust, setTrust] = useState(false);
  const [touched, setTouched] = useState(false);
  const t = useT();
  const verify = useMutation({
    mutationFn: () => {
      const body = { code: code.trim(), trustDevice: trust };
      if (method === "backup") return unwrap(api.POST("/two-factor/verify-backup-code", { body }));
      if (method === "otp") return unwrap(api.POST("/two-factor/verify-otp", { body }));
      return unwrap(api.POST("/two-factor/verify-totp", { body }));
    },
    onSuccess: () => props.onDone(),
  });
  const send = useMutation({
    mutationFn: () => unwrap(api.POST("/two-factor/send-otp")),
    onSuccess: () => choose("otp"),
  });
  // Codes by mail the only way (no authenticator app): the first one goes out at once.
  const sent = useRef(false);
  useEffect(() => {
    if (otpOnly && !sent.current) {
      sent.current = true;
      send.mutate();
    }
  }, [otpOnly, send]);
  const choose = (m: Method) => {
    setMethod(m);
    setCode("");
    setTouched(false);
    verify.reset();
  };
  const problem = touched && !code.trim() ? (backup ? t("Enter one of your backup codes.") : t("Enter the 6-digit code.")) : null;
  return (
    <form
      aria-label={t("Second sign-in step")}
      onSubmit={(e) => {
        e.preventDefault();
        setTouched(true);
        if (code.trim()) verify.mutate();
      }}
      noValidate
    >
      <p className="muted">
        {backup
          ? t("Enter one of the backup codes you saved when you set up two-factor sign-in. Each works once.")
          : method === "otp"
            ? t("We emailed you a 6-digit code. It works once, for 5 minutes.")
            : t("Open your authenticator app and enter the 6-digit code it shows for this account.")}
      </p>
      <Field
        label={backup ? t("Backup code") : method === "otp" ? t("Code from the email") : t("Authentication code")}
        name="code"
        autoComplete="one-time-code"
        value={code}
        onChange={setCode}
        error={problem}
      />
      <label className="check">
        <input type="checkbox" checked={trust} onChange={(e) => setTrust(e.target.checked)} /> {t("Trust this browser for 30 days")}
      </label>
      <ErrorBox error={verify.error ?? send.error} />
      <Submit pending={verify.isPending}>{t("Verify")}</Submit>
      <p className="muted row">
        {totp && method !== "totp" && (
          <button type="button" className="link" onClick={() => choose("totp")}>
            {t("Use the authenticator app instead")}
          </button>
        )}
        {offered.includes("otp") && (
          <button type="button" className="link" disabled={send.isPending} onClick={() => send.mutate()}>
            {method === "otp" ? t("Email me a new code") : t("Email me a code")}
          </button>
        )}
        {!backup && (
          <button type="button" className="link" onClick={() => choose("backup")}>
            {t("Use a backup code instead")}
          </button>
        )}
        {props.onCancel && (
          <button type="button" className="link" onClick={props.onCancel}>
            {t("Start over")}
          </button>
        )}
      </p>
    </form>
  );
}
