/** Account names, which are also console sign-in usernames. */
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;

/** The one rule for a new account's name, wherever the account is made (CLI, console); undefined when it is fine. */
export function accountNameProblem(name: string): string | undefined {
  return NAME_PATTERN.test(name) ? undefined : 'An account name is 1-100 letters, digits or ._@- and starts with a letter or digit.';
}
