// The budget periods on their own, without the limits' schema (zod): the command line lists them
// as a flag's choices in every command, `sluice serve`'s cluster primary included, which loads no zod.

/** A spend budget's period: calendar (UTC) day, ISO week (from Monday), month, or no period at all. */
export const BUDGET_PERIODS = ['day', 'week', 'month', 'total'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];
