;;; eglot_plain.el --- Eglot and no kiln package, against the real kiln -*- lexical-binding: t -*-

;; Debian's Eglot (elpa-eglot) with `emacs --batch -Q': the validator's
;; diagnostics reach flymake on a python-mode buffer, the code actions are
;; listed, and "Run document in kiln" runs through Eglot's own code-action
;; path (workspace/executeCommand), whose window/showMessage summary Eglot
;; shows.  Run: KILN_BIN=... emacs --batch -Q -l eglot_plain.el
;; Prints one "ok NAME" or "FAIL NAME: why" per check, then
;; "lsp-eglot: N passed, N failed".

;;; Code:

(require 'cl-lib)
(dolist (d (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
  (add-to-list 'load-path d))
(require 'eglot)
(require 'flymake)

(defvar kp-pass 0)
(defvar kp-fail 0)
(defun kp-check (name ok why)
  "Count check NAME, which passed when OK; WHY says what was seen."
  (if ok
      (progn (setq kp-pass (1+ kp-pass)) (princ (format "ok %s\n" name)))
    (setq kp-fail (1+ kp-fail))
    (princ (format "FAIL %s: %S\n" name why))))

(defun kp-wait (pred secs)
  "Wait up to SECS seconds for PRED to be true, serving process output."
  (let ((end (+ (float-time) secs)))
    (while (and (not (funcall pred)) (< (float-time) end))
      (accept-process-output nil 0.05))
    (funcall pred)))

(defvar kp-messages nil)
(advice-add 'eglot--message :around
            (lambda (orig fmt &rest args)
              (push (apply #'format fmt args) kp-messages)
              (apply orig fmt args)))

(let* ((kiln (or (getenv "KILN_BIN") (error "KILN_BIN not set")))
       (dir (make-temp-file "kiln-eglot" t))
       (file (expand-file-name "plain.py" dir)))
  ;; The folder is the run's workspace: as root, the box runs as nobody,
  ;; who must be able to read it.
  (set-file-modes dir #o755)
  (with-temp-file file (insert "import socket\nprint('from kiln')\n"))
  (setq eglot-server-programs `((python-mode . (,kiln))))
  (find-file file)
  (python-mode)
  ;; M-x eglot (eglot-ensure waits for a command loop batch mode lacks).
  (apply #'eglot (eglot--guess-contact))
  (kp-check "eglot connected"
            (kp-wait (lambda () (eglot-current-server)) 10) "no server")
  (flymake-start)
  (kp-check "diagnostics shown (flymake)"
            (kp-wait (lambda ()
                       (cl-some (lambda (d)
                                  (string-match-p "network" (flymake-diagnostic-text d)))
                                (flymake-diagnostics)))
                     10)
            (mapcar #'flymake-diagnostic-text (flymake-diagnostics)))
  (let ((actions (eglot-code-actions (point-min) (point-max))))
    (kp-check "code actions listed"
              (member "Run document in kiln"
                      (mapcar (lambda (a) (plist-get a :title)) actions))
              actions))
  ;; Fix the import, then run the document through Eglot's own menu.
  (goto-char (point-min))
  (delete-region (point) (line-end-position))
  (insert "import json")
  (kp-check "diagnostics cleared after the edit"
            (kp-wait (lambda () (null (flymake-diagnostics))) 10)
            (mapcar #'flymake-diagnostic-text (flymake-diagnostics)))
  ;; As from the keyboard (not a mouse menu), picking the action by name.
  (let ((last-nonmenu-event ?\r))
    (cl-letf (((symbol-function 'completing-read)
               (lambda (&rest _) "Run document in kiln")))
      (eglot-code-actions (point-min) nil nil t)))
  (kp-check "run summary shown (window/showMessage)"
            (kp-wait (lambda ()
                       (cl-some (lambda (m)
                                  (string-match-p "of the document (python) exited 0" m))
                                kp-messages))
                     15)
            kp-messages)
  (eglot-shutdown (eglot-current-server))
  (princ (format "lsp-eglot: %d passed, %d failed\n" kp-pass kp-fail))
  (kill-emacs (if (= kp-fail 0) 0 1)))

;;; eglot_plain.el ends here
