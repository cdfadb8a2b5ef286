/**
 * One upstream attempt of a routed request: routing records it, the ledger keeps it (when there
 * was more than one attempt, or the only one failed after the upstream had the prompt) for
 * reconciling with each provider's bill.
 */
export interface AttemptLogEntry {
  readonly model: string;
  readonly deployment: string;
  readonly providerId: string;
  readonly status: number;
  readonly errorKind: string | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly latencyMs: number;
}
