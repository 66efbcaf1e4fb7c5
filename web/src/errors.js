// Errors of the lwx-edge JavaScript package: one class per kind of problem, each message names it.

/** Base class of every error this package throws on purpose. */
export class LwxError extends Error {
  constructor(message) {
    super(message);
    this.name = this.constructor.name;
  }
}

/** A bundle that is missing, damaged, edited, or not one this package can run. */
export class BundleError extends LwxError {}

/** A bad argument or input text. */
export class InputError extends LwxError {}

/** A head that cannot be read, or that was fitted on another encoder. */
export class HeadError extends LwxError {}
