import { OperatorError } from "../config";

/** An import that cannot go on: a file it cannot read, a checkpoint that does not fit, a batch refused for good. */
export class ImportError extends OperatorError {
  override name = "ImportError";
}
