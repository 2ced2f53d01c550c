package io.txbox.outbox;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.internal.KeyRules;

/**
 * The idempotency key of one saga step: the client's original key and a step name, written
 * {@code original:step}. Every step of a saga gets its own key, so each runs once saga-wide.
 *
 * <p>Step names may not contain {@code ':'}; the original key may. A received step key is
 * therefore split at its last colon, and {@link #next(String)} keeps the original:
 * {@code StepKey.parse("K:process-payment").next("arrange-shipping")} is
 * {@code K:arrange-shipping}.
 *
 * @param original the client's key, as received (validated like every key)
 * @param step the step name: non-empty, no {@code ':'}, no control characters
 */
public record StepKey(String original, String step) {
    public StepKey {
        KeyRules.check("original key", original);
        KeyRules.check("step name", step);
        if (step.indexOf(':') >= 0) {
            throw new InvalidInputException("step name may not contain ':': " + Texts.quote(step));
        }
        KeyRules.check("step key", original + ':' + step);
    }

    /** The step {@code step} of the saga started by {@code original}. */
    public static StepKey of(String original, String step) {
        return new StepKey(original, step);
    }

    /**
     * Reads a step key received from a broker or an inbox.
     *
     * @throws InvalidInputException if it has no {@code ':'}, or either part is invalid
     */
    public static StepKey parse(String stepKey) {
        KeyRules.check("step key", stepKey);
        int colon = stepKey.lastIndexOf(':');
        if (colon <= 0 || colon == stepKey.length() - 1) {
            throw new InvalidInputException("not a step key (want original:step): " + Texts.quote(stepKey));
        }
        return new StepKey(stepKey.substring(0, colon), stepKey.substring(colon + 1));
    }

    /** The next step of the same saga: same original key, new step name. */
    public StepKey next(String nextStep) {
        io.txbox.internal.Args.notNull(nextStep, "nextStep");
        return new StepKey(original, nextStep);
    }

    /** {@code original:step}. */
    public String value() {
        return original + ':' + step;
    }

    @Override
    public String toString() {
        return value();
    }
}
