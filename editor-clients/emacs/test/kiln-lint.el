;;; kiln-lint.el --- Byte-compile, checkdoc and package-lint kiln.el  -*- lexical-binding: t; -*-

;; Run by tests/suites/66-emacs-package.sh, one check per argument:
;;   emacs --batch -Q -l test/kiln-lint.el -f kiln-lint-batch compile|checkdoc|package-lint
;; Each prints what it found and "kiln-lint: NAME ok" or "kiln-lint:
;; NAME FAILED", and exits non-zero when it found anything.

;;; Code:

(require 'cl-lib)
(require 'bytecomp)
(require 'checkdoc)

(defconst kiln-lint--dir
  (expand-file-name ".." (file-name-directory (or load-file-name buffer-file-name)))
  "The package's directory.")

(defun kiln-lint--files ()
  "The package's Lisp files."
  (directory-files kiln-lint--dir t "\\`kiln.*\\.el\\'"))

(defun kiln-lint--compile ()
  "Byte-compile every file with warnings as errors; return the problems."
  (let ((byte-compile-error-on-warn t)
        (load-path (cons kiln-lint--dir load-path))
        (problems nil))
    (dolist (f (kiln-lint--files))
      (let ((dest (make-temp-file "kiln-lint" nil ".elc")))
        (unwind-protect
            (let ((byte-compile-dest-file-function (lambda (_) dest)))
              (unless (byte-compile-file f)
                (push (format "%s does not compile cleanly (see above)" f) problems)))
          (delete-file dest))))
    problems))

(defun kiln-lint--checkdoc ()
  "Run checkdoc over every file; return the problems."
  (require 'checkdoc)
  (let ((problems nil))
    (dolist (f (kiln-lint--files))
      (with-current-buffer (find-file-noselect f)
        (let ((checkdoc-diagnostic-buffer "*kiln-checkdoc*"))
          (when (get-buffer checkdoc-diagnostic-buffer)
            (kill-buffer checkdoc-diagnostic-buffer))
          ;; checkdoc-file prints its findings as warnings; collect them
          ;; from its buffer instead.
          (let ((checkdoc-create-error-function
                 (lambda (text start _end &optional _unfixable)
                   (push (format "%s:%d: %s" f (if (integer-or-marker-p start) (line-number-at-pos start) 0) text) problems)
                   nil)))
            (checkdoc-current-buffer t)))))
    (nreverse problems)))

(defun kiln-lint--package-lint ()
  "Run Debian's package-lint over kiln.el; return the problems."
  (let ((dir (car (file-expand-wildcards
                   "/usr/share/emacs/site-lisp/elpa/package-lint-*"))))
    (unless dir
      (error "No package-lint: install Debian's elpa-package-lint"))
    (add-to-list 'load-path dir)
    (require 'package-lint)
    (let ((problems nil))
      (dolist (f (kiln-lint--files))
        (with-current-buffer (find-file-noselect f)
          (let ((package-lint-main-file (expand-file-name "kiln.el" kiln-lint--dir)))
            (dolist (p (package-lint-buffer))
              (pcase-let ((`(,line ,col ,type ,message) p))
                ;; package-lint 0.16's list of Emacs versions ends before
                ;; 28, so it calls any (emacs "28.x") dependency
                ;; uninstallable.  That one finding is the lint's, not
                ;; kiln.el's; everything else counts.
                (unless (and (string-match-p "uninstallable in all released Emacs" message)
                             (save-excursion
                               (goto-char (point-min))
                               (forward-line (1- line))
                               (looking-at-p ".*(emacs \"28\\.")))
                  (push (format "%s:%d:%d: %s: %s" f line col type message) problems)))))))
      (nreverse problems))))

(defun kiln-lint-batch ()
  "Run the checks named on the command line; exit 1 when one finds anything."
  (let ((failed nil))
    (dolist (name command-line-args-left)
      (let ((problems (condition-case err
                          (pcase name
                            ("compile" (kiln-lint--compile))
                            ("checkdoc" (kiln-lint--checkdoc))
                            ("package-lint" (kiln-lint--package-lint))
                            (_ (list (format "unknown check %s" name))))
                        (error (list (format "%s failed: %s" name
                                             (error-message-string err)))))))
        (dolist (p problems) (message "%s" p))
        (message "kiln-lint: %s %s" name (if problems "FAILED" "ok"))
        (when problems (setq failed t))))
    (setq command-line-args-left nil)
    (kill-emacs (if failed 1 0))))

(provide 'kiln-lint)
;;; kiln-lint.el ends here
