"use client";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";

type Act = (input: unknown) => Promise<ActionResult>;

/** Acknowledge / silence one alert; each is an audit entry (lib/services/observe/alert-actions.ts). */
export function AlertButtons({ id, acknowledge, silence, acknowledged }: { id: string; acknowledge: Act; silence: Act; acknowledged: boolean }) {
  const [minutes, setMinutes] = useState(60);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [pending, start] = useTransition();
  const run = (fn: () => Promise<ActionResult>) =>
    start(async () => {
      const r = await fn();
      setMessage({ ok: r.ok, text: r.message ?? "" });
    });
  return (
    <span className="inline-flex flex-wrap items-center gap-2">
      {!acknowledged && (
        <button type="button" className="btn" disabled={pending} onClick={() => run(() => acknowledge({ id }))}>
          Acknowledge
        </button>
      )}
      <label className="sr-only" htmlFor={`silence-${id}`}>
        Silence for
      </label>
      <select id={`silence-${id}`} className="input w-auto" value={minutes} onChange={(e) => setMinutes(Number(e.target.value))} disabled={pending}>
        <option value={15}>15 min</option>
        <option value={60}>1 h</option>
        <option value={240}>4 h</option>
        <option value={1440}>1 day</option>
      </select>
      <button type="button" className="btn" disabled={pending} onClick={() => run(() => silence({ id, minutes }))}>
        Silence
      </button>
      {message && (
        <span role={message.ok ? "status" : "alert"} className={`text-xs ${message.ok ? "text-green-700" : "text-red-700"}`}>
          {message.text}
        </span>
      )}
    </span>
  );
}
